"""`session/list`, `session/resume` and `session/close` with the SDK's client over a
real `assemble acp` process: the recorded sessions of this agent in this workspace,
a page at a time; resuming one in a new process without replaying it; closing one."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from acp import RequestError
from acp_harness import Editor, manifest, serving, wait_for_process
from procs import live_processes_with

from assembler.acp.listing import PAGE_SIZE
from assembler.sessions.store import SessionStore

ANSWERS = "- text: First answer.\n"


def test_sessions_are_listed_resumed_and_closed(tmp_path: Path) -> None:
    agent = manifest(tmp_path, ANSWERS)
    (tmp_path / "later.yaml").write_text("- text: Resumed answer.\n")
    sessions = tmp_path / "sessions"
    work = str((tmp_path / "work").resolve())
    # sessions that are not this agent's threads here: another agent's, another
    # checkout's, and one a sub-agent ran
    store = SessionStore(sessions)
    store.start(agent="other", manifest=None, model="scripted:x", workspace=Path(work))
    store.start(agent="helper", manifest=None, model="scripted:x", workspace=tmp_path / "elsewhere")
    store.start(
        agent="helper",
        manifest=None,
        model="scripted:x",
        workspace=Path(work),
        delegated_from={"session": "s", "entry": "e"},
    )

    async def first() -> list[str]:
        async with serving(agent, "--session-dir", str(sessions)) as acp:
            init = await acp.conn.initialize(protocol_version=1)
            capabilities = init.agent_capabilities
            assert capabilities is not None and capabilities.session_capabilities is not None
            offered = capabilities.session_capabilities
            assert offered.list is not None and offered.resume is not None
            assert offered.close is not None
            made = []
            for question in ("Where is the  fee\ncomputed?", "Second question"):
                session = (await acp.conn.new_session(cwd=work, mcp_servers=[])).session_id
                assert (await acp.prompt(session, question)).stop_reason == "end_turn"
                made.append(session)
            listed = await acp.conn.list_sessions(cwd=work)
            assert listed.next_cursor is None
            assert [s.session_id for s in listed.sessions] == made[::-1]  # newest first
            newest, oldest = listed.sessions
            assert (oldest.title, oldest.cwd) == ("Where is the fee computed?", work)
            assert newest.title == "Second question"
            assert oldest.updated_at is not None and oldest.updated_at.endswith("Z")
            assert oldest.updated_at <= newest.updated_at  # type: ignore[operator]
            # closed: gone from this process, still on disk (and listed)
            await acp.conn.close_session(session_id=made[0])
            with pytest.raises(RequestError, match="no session"):
                await acp.prompt(made[0], "Still there?")
            with pytest.raises(RequestError, match="no session"):
                await acp.conn.close_session(session_id=made[0])
            again = await acp.conn.list_sessions()
            assert [s.session_id for s in again.sessions] == made[::-1]
            return made

    made = asyncio.run(first())
    editor = Editor()

    async def second() -> None:
        args = ("--session-dir", str(sessions), "--model", "scripted:later.yaml")
        async with serving(agent, *args, editor=editor) as acp:
            await acp.conn.initialize(protocol_version=1)
            resumed = await acp.conn.resume_session(cwd=work, session_id=made[0], mcp_servers=[])
            assert resumed.modes is not None and resumed.modes.current_mode_id == "default"
            assert editor.of(made[0]) == []  # resumed, not replayed
            assert (await acp.prompt(made[0], "And now?")).stop_reason == "end_turn"
            assert editor.text(made[0]) == "Resumed answer."
            with pytest.raises(RequestError) as missing:
                await acp.conn.resume_session(cwd=work, session_id="nope", mcp_servers=[])
            assert missing.value.code == -32002

    asyncio.run(second())
    lines = (sessions / f"{made[0]}.jsonl").read_text().splitlines()
    users = [
        r["message"]["content"]
        for r in map(json.loads, lines)
        if r.get("message", {}).get("role") == "user"
    ]
    assert users == ["Where is the  fee\ncomputed?", "And now?"]


def test_a_long_list_comes_in_pages(tmp_path: Path) -> None:
    agent = manifest(tmp_path, ANSWERS)
    sessions = tmp_path / "sessions"
    store = SessionStore(sessions)
    work = (tmp_path / "work").resolve()
    made = {
        store.start(agent="helper", manifest=None, model="scripted:x", workspace=work).id
        for _ in range(PAGE_SIZE + 3)
    }

    async def scenario() -> None:
        async with serving(agent, "--session-dir", str(sessions)) as acp:
            await acp.conn.initialize(protocol_version=1)
            page = await acp.conn.list_sessions()
            assert len(page.sessions) == PAGE_SIZE and page.next_cursor is not None
            rest = await acp.conn.list_sessions(cursor=page.next_cursor)
            assert len(rest.sessions) == 3 and rest.next_cursor is None
            assert {s.session_id for s in page.sessions + rest.sessions} == made
            assert all(s.title is None for s in rest.sessions)  # nothing asked yet
            with pytest.raises(RequestError) as bad:
                await acp.conn.list_sessions(cursor="not-mine")
            assert bad.value.code == -32602

    asyncio.run(scenario())


def test_without_session_files_there_is_nothing_to_list_or_resume(tmp_path: Path) -> None:
    agent = manifest(tmp_path, ANSWERS)

    async def scenario() -> None:
        async with serving(agent, "--no-session") as acp:
            init = await acp.conn.initialize(protocol_version=1)
            assert init.agent_capabilities is not None
            offered = init.agent_capabilities.session_capabilities
            assert offered is not None and offered.list is None and offered.resume is None
            assert (await acp.conn.list_sessions()).sessions == []
            with pytest.raises(RequestError, match="records no sessions"):
                await acp.conn.resume_session(cwd="/", session_id="x", mcp_servers=[])
            session = (await acp.conn.new_session(cwd="/", mcp_servers=[])).session_id
            await acp.conn.close_session(session_id=session)  # closing needs no file

    asyncio.run(scenario())


def test_closing_a_session_stops_its_running_turn(tmp_path: Path) -> None:
    """`session/close` mid-turn: the turn answers `cancelled`, its command is killed,
    and the session is gone; the connection and other sessions go on."""
    sleeper = f"sleep 30.{os.getpid()}27"
    agent = manifest(
        tmp_path,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{sleeper}'}}}}]\n",
    )

    async def scenario() -> None:
        async with serving(agent, "--no-session") as acp:
            session = await acp.start()
            turn = asyncio.create_task(acp.prompt(session, "Wait."))
            await wait_for_process(sleeper)
            await acp.conn.close_session(session_id=session)
            assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
            assert live_processes_with(sleeper) == []
            with pytest.raises(RequestError, match="no session"):
                await acp.prompt(session, "Still there?")
            # the connection goes on (a new session's agent replays the script from
            # its start, so it is opened and closed, not prompted)
            other = (await acp.conn.new_session(cwd="/", mcp_servers=[])).session_id
            await acp.conn.close_session(session_id=other)

    asyncio.run(scenario())
