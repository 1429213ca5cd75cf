"""Sessions over ACP: `session/load` resumes a recorded session in a new process and
replays its history first; trust is refused with its message, not a crash."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import AgentMessageChunk, ToolCallStart, UserMessageChunk
from acp_harness import Editor, manifest, serving

from assembler.trust import TrustStore

FIRST = """\
- text: Reading.
  tool_calls: [{name: read, arguments: {path: notes.txt}}]
- text: The notes say hello.
"""


def test_load_replays_the_history_then_continues_it(tmp_path: Path) -> None:
    agent = manifest(tmp_path, FIRST, files=[("notes.txt", "hello\n")])
    (tmp_path / "second.yaml").write_text("- text: Still hello.\n")
    sessions = tmp_path / "sessions"
    notes = str(tmp_path / "work" / "notes.txt")

    async def first() -> str:
        async with serving(agent, "--session-dir", str(sessions)) as acp:
            session = await acp.start()
            assert (await acp.prompt(session, "What do the notes say?")).stop_reason == "end_turn"
            return session

    session = asyncio.run(first())
    editor = Editor()

    async def second() -> list[object]:
        args = ("--session-dir", str(sessions), "--model", "scripted:second.yaml")
        async with serving(agent, *args, editor=editor) as acp:
            await acp.conn.initialize(protocol_version=1)
            await acp.conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[])
            replayed = list(editor.of(session))
            answer = await acp.prompt(session, "And now?")
            assert answer.stop_reason == "end_turn"
            return replayed

    replayed = asyncio.run(second())
    user, said, read, answered = replayed
    assert isinstance(user, UserMessageChunk) and user.content.text == "What do the notes say?"
    assert isinstance(said, AgentMessageChunk) and said.content.text == "Reading."
    assert isinstance(read, ToolCallStart)
    assert (read.title, read.kind, read.status) == ("Read notes.txt", "read", "completed")
    assert [loc.path for loc in read.locations or []] == [notes]
    assert "hello" in read.content[0].content.text  # type: ignore[index, union-attr]
    assert isinstance(answered, AgentMessageChunk)
    assert answered.content.text == "The notes say hello."
    assert editor.text(session).endswith("Still hello.")
    # one session file holds both processes' turns, in order
    records = [
        json.loads(line) for line in (sessions / f"{session}.jsonl").read_text().splitlines()
    ]
    users = [r["message"]["content"] for r in records if r.get("message", {}).get("role") == "user"]
    assert users == ["What do the notes say?", "And now?"]
    assert [p.name for p in sessions.glob("*.jsonl") if ".trace." not in p.name] == [
        f"{session}.jsonl"
    ]


def test_loading_a_session_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: unused\n")

    async def scenario() -> None:
        async with serving(agent, "--session-dir", str(tmp_path / "sessions")) as acp:
            await acp.conn.initialize(protocol_version=1)
            with pytest.raises(RequestError) as missing:
                await acp.conn.load_session(cwd="/", session_id="nope", mcp_servers=[])
            assert missing.value.code == -32002
            assert "no session 'nope'" in str(missing.value)

    asyncio.run(scenario())


def test_without_session_files_nothing_can_be_loaded(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: unused\n")

    async def scenario() -> None:
        async with serving(agent, "--no-session") as acp:
            answer = await acp.conn.initialize(protocol_version=1)
            assert answer.agent_capabilities is not None
            assert answer.agent_capabilities.load_session is False
            with pytest.raises(RequestError, match="records no sessions"):
                await acp.conn.load_session(cwd="/", session_id="x", mcp_servers=[])

    asyncio.run(scenario())


def test_an_untrusted_directory_is_refused_with_the_trust_message(tmp_path: Path) -> None:
    """The editor cannot ask the trust question: session/new answers with the message
    saying how to trust, and once the directory is trusted, a new session starts."""
    (tmp_path / "tools.py").write_text(
        'def shout(text: str) -> str:\n    """Shout."""\n    return text\n'
    )
    agent = manifest(
        tmp_path, "- text: Trusted now.\n", extra="    - python:\n        - function: tools:shout\n"
    )

    async def scenario() -> str:
        async with serving(agent, "--no-session", trust=False) as acp:
            await acp.conn.initialize(protocol_version=1)
            with pytest.raises(RequestError) as refused:
                await acp.conn.new_session(cwd="/", mcp_servers=[])
            message = str(refused.value)
            assert f"{tmp_path} is not a trusted directory" in message
            assert f"assemble trust add {tmp_path}" in message
            assert refused.value.data == {"type": "TrustError"}
            TrustStore().add(tmp_path)
            session = (await acp.conn.new_session(cwd="/", mcp_servers=[])).session_id
            assert (await acp.prompt(session, "Now?")).stop_reason == "end_turn"
            return acp.log()

    log = asyncio.run(scenario())
    assert "is not a trusted directory" in log


def test_the_trust_flag_trusts_for_this_server(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(
        'def shout(text: str) -> str:\n    """Shout."""\n    return text\n'
    )
    agent = manifest(
        tmp_path, "- text: Fine.\n", extra="    - python:\n        - function: tools:shout\n"
    )

    async def scenario() -> str:
        async with serving(agent, "--no-session", "--trust") as acp:
            session = await acp.start()
            return (await acp.prompt(session, "Hi.")).stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert TrustStore().entries() == []  # nothing remembered
