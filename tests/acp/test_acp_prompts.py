"""`assemble acp`: initialize, a new session, and a prompt turn streamed to the editor
(message chunks, tool calls with their kind, files and outcome), driven by the SDK's
client over a real subprocess with a scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
)
from acp_harness import Editor, manifest, serving


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_initialize_says_what_the_agent_can_do(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: unused\n")

    async def scenario() -> None:
        async with serving(agent) as acp:
            answer = await acp.conn.initialize(protocol_version=1)
            assert answer.protocol_version == 1
            capabilities = answer.agent_capabilities
            assert capabilities is not None and capabilities.load_session is True
            assert capabilities.prompt_capabilities is not None
            assert capabilities.prompt_capabilities.embedded_context is True
            assert capabilities.prompt_capabilities.image is False
            assert answer.agent_info is not None
            assert (answer.agent_info.name, answer.agent_info.title) == (
                "agent-assembler",
                "helper",
            )

    run(scenario())


def test_a_new_session_is_a_new_session_file(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: unused\n")
    sessions = tmp_path / "sessions"

    async def scenario() -> tuple[str, str]:
        async with serving(agent, "--session-dir", str(sessions)) as acp:
            first = await acp.start()
            second = (await acp.conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            return first, second

    first, second = run(scenario())
    assert first != second
    files = sorted(p.name for p in sessions.glob("*.jsonl"))
    assert files == sorted([f"{first}.jsonl", f"{second}.jsonl"])


SCRIPT = """\
- text: Let me look.
  tool_calls: [{name: read, arguments: {path: notes.txt}}]
- tool_calls:
    - {name: edit, arguments: {path: notes.txt, old_text: hello, new_text: goodbye}}
- text: I changed the greeting.
"""


def test_a_prompt_streams_text_and_tool_calls_with_their_files(tmp_path: Path) -> None:
    agent = manifest(tmp_path, SCRIPT, files=[("notes.txt", "hello there\n")])
    notes = str(tmp_path / "work" / "notes.txt")
    editor = Editor()

    async def scenario() -> tuple[str, str]:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start(tmp_path / "work")
            answer = await acp.prompt(session, "Change the greeting.")
            return session, answer.stop_reason

    session, stop = run(scenario())
    assert stop == "end_turn"
    assert editor.text(session) == "Let me look.I changed the greeting."
    read, edit = editor.starts(session)
    assert (read.title, read.kind, read.status) == ("Read notes.txt", "read", "pending")
    assert [location.path for location in read.locations or []] == [notes]
    assert read.raw_input == {"path": "notes.txt"}
    assert (edit.title, edit.kind) == ("Edit notes.txt", "edit")
    diff = (edit.content or [])[0]
    assert isinstance(diff, FileEditToolCallContent)
    assert (diff.path, diff.old_text, diff.new_text) == (notes, "hello", "goodbye")
    read_done, edit_done = editor.progress(session)
    assert (read_done.tool_call_id, read_done.status) == (read.tool_call_id, "completed")
    assert "hello there" in str((read_done.content or [])[0].content.text)  # type: ignore[union-attr]
    assert (edit_done.tool_call_id, edit_done.status) == (edit.tool_call_id, "completed")
    assert [type(c) for c in edit_done.content or []] == [
        FileEditToolCallContent,
        ContentToolCallContent,
    ]
    assert [(loc.path, loc.line) for loc in edit_done.locations or []] == [(notes, 0)]
    assert (tmp_path / "work" / "notes.txt").read_text() == "goodbye there\n"
    # in the order things happened: each call's start, its end, then the answer
    kinds = [
        (type(u).__name__, getattr(u, "tool_call_id", ""))
        for u in editor.of(session)
        if not isinstance(u, AgentMessageChunk)
    ]
    assert kinds == [
        ("ToolCallStart", read.tool_call_id),
        ("ToolCallProgress", read.tool_call_id),
        ("ToolCallStart", edit.tool_call_id),
        ("ToolCallProgress", edit.tool_call_id),
    ]
    last_tool = max(
        i
        for i, u in enumerate(editor.of(session))
        if isinstance(u, ToolCallStart | ToolCallProgress)
    )
    assert (
        "".join(
            u.content.text
            for u in editor.of(session)[last_tool:]
            if isinstance(u, AgentMessageChunk)
        )
        == "I changed the greeting."
    )


def test_a_failed_tool_call_ends_as_failed(tmp_path: Path) -> None:
    script = (
        "- tool_calls: [{name: bash, arguments: {command: 'echo broken >&2; exit 3'}},"
        " {name: grep, arguments: {pattern: needle, path: src}}]\n- text: Done.\n"
    )
    agent = manifest(tmp_path, script, files=[("src/a.txt", "a needle\n")])
    editor = Editor()

    async def scenario() -> str:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            await acp.prompt(session, "Go.")
            return session

    session = run(scenario())
    bash, grep = editor.starts(session)
    assert (bash.kind, bash.title, bash.locations) == (
        "execute",
        "Run `echo broken >&2; exit 3`",
        None,
    )
    assert (grep.kind, grep.title) == ("search", "Search `needle` in src")
    assert [loc.path for loc in grep.locations or []] == [str(tmp_path / "work" / "src")]
    statuses = {u.tool_call_id: u.status for u in editor.progress(session)}
    assert statuses == {bash.tool_call_id: "failed", grep.tool_call_id: "completed"}


def test_resource_links_and_embedded_files_reach_the_model(tmp_path: Path) -> None:
    """The model is told the linked file's workspace path and the embedded text; the
    scripted model echoes nothing, so the session file shows what it was sent."""
    agent = manifest(tmp_path, "- text: Seen.\n", files=[("src/app.py", "print(1)\n")])
    sessions = tmp_path / "sessions"
    app = tmp_path / "work" / "src" / "app.py"

    async def scenario() -> str:
        async with serving(agent, "--session-dir", str(sessions)) as acp:
            session = await acp.start()
            blocks: list[Any] = [
                text_block("Look at"),
                ResourceContentBlock(type="resource_link", name="app.py", uri=app.as_uri()),
                EmbeddedResourceContentBlock(
                    type="resource",
                    resource=TextResourceContents(uri=app.as_uri(), text="selected = True\n"),
                ),
            ]
            answer = await acp.conn.prompt(session_id=session, prompt=blocks)
            assert answer.stop_reason == "end_turn"
            with pytest.raises(RequestError) as refused:
                await acp.conn.prompt(
                    session_id=session,
                    prompt=[ImageContentBlock(type="image", data="AAAA", mime_type="image/png")],
                )
            assert "not image content" in str(refused.value)
            return session

    session = run(scenario())
    records = [
        json.loads(line) for line in (sessions / f"{session}.jsonl").read_text().splitlines()
    ]
    users = [r["message"]["content"] for r in records if r.get("message", {}).get("role") == "user"]
    assert users == [
        'Look at\nsrc/app.py\n<context source="src/app.py">\nselected = True\n</context>'
    ]


def test_an_unknown_session_or_an_empty_prompt_is_an_error_not_a_crash(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: Fine.\n")

    async def scenario() -> None:
        async with serving(agent, "--no-session") as acp:
            session = await acp.start()
            with pytest.raises(RequestError) as unknown:
                await acp.prompt("nope", "hi")
            assert unknown.value.code == -32602 and "no session 'nope'" in str(unknown.value)
            with pytest.raises(RequestError, match="the prompt is empty"):
                await acp.prompt(session, "  ")
            assert (await acp.prompt(session, "hi")).stop_reason == "end_turn"

    run(scenario())


def test_a_model_failure_is_the_prompts_error(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: Only once.\n")
    editor = Editor()

    async def scenario() -> str:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            assert (await acp.prompt(session, "one")).stop_reason == "end_turn"
            with pytest.raises(RequestError) as failed:
                await acp.prompt(session, "two")
            assert "script exhausted" in str(failed.value)
            return session

    session = run(scenario())
    thoughts = editor.thoughts(session)
    assert (
        thoughts.startswith("error: scripted:") and "script exhausted after 1 replies" in thoughts
    )


NOISY = '''\
import os
import sys


def shout(text: str) -> str:
    """Say it louder, noisily."""
    print("NOISE-PRINT")
    sys.stdout.flush()
    os.system("echo NOISE-SHELL")
    os.write(1, b"NOISE-FD\\n")
    return text.upper()
'''


def test_nothing_but_the_protocol_reaches_stdout(tmp_path: Path) -> None:
    """A tool that prints, runs a command that prints and writes to descriptor 1:
    every line on stdout is still a JSON-RPC message, and the noise is on stderr."""
    (tmp_path / "noisy.py").write_text(NOISY)
    agent = manifest(
        tmp_path,
        "- tool_calls: [{name: shout, arguments: {text: hi}}]\n- text: Loud.\n",
        extra="    - python:\n        - function: noisy:shout\n",
    )
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []},
        },
    ]

    async def scenario() -> tuple[list[bytes], bytes]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "assembler", "acp", str(agent), "--trust", "--no-session",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(os.environ),
        )  # fmt: skip
        assert process.stdin and process.stdout and process.stderr
        lines: list[bytes] = []

        async def reply(ident: int) -> dict[str, Any]:
            while True:
                line = await asyncio.wait_for(process.stdout.readline(), 60)  # type: ignore[union-attr]
                assert line, "the agent exited early"
                lines.append(line)
                message = json.loads(line)
                if message.get("id") == ident and "method" not in message:
                    return message  # type: ignore[no-any-return]

        for request in requests:
            process.stdin.write((json.dumps(request) + "\n").encode())
        await reply(0)
        session = (await reply(1))["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "Shout."}]}
        process.stdin.write(
            (
                json.dumps(
                    {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
                )
                + "\n"
            ).encode()
        )
        assert (await reply(2))["result"] == {"stopReason": "end_turn"}
        process.stdin.close()
        rest, errors = await asyncio.wait_for(
            asyncio.gather(process.stdout.read(), process.stderr.read()), 60
        )
        assert await process.wait() == 0
        lines.extend(rest.splitlines(keepends=True))
        return lines, errors

    lines, errors = run(scenario())
    assert lines and all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    results = [json.loads(line) for line in lines]
    shouted = [
        m for m in results if m.get("params", {}).get("update", {}).get("status") == "completed"
    ]
    assert shouted[0]["params"]["update"]["content"][0]["content"]["text"] == "HI"
    for noise in (b"NOISE-PRINT", b"NOISE-SHELL", b"NOISE-FD"):
        assert noise in errors
