"""`session/fork` (issue 27): a new session file continuing from where a recorded
session stands; the original is left as it was, the fork starts with its plan, and
without session files there is nothing to fork."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import AgentPlanUpdate
from acp_harness import Editor, serving

SCRIPT = """\
- tool_calls: [{name: todo_write, arguments: {todos: [{content: Fix the fee, status: in_progress}]}}]
- text: Planned.
"""


def project(root: Path) -> Path:
    (root / "work").mkdir()
    (root / "script.yaml").write_text(SCRIPT)
    path = root / "agent.yaml"
    path.write_text(
        "version: 1\nname: planner\nidentity: You plan.\nmodel: scripted:script.yaml\n"
        "workspace: work\ntools:\n  sets: [readonly, todo]\n"
    )
    return path


def records(sessions: Path, session_id: str) -> list[dict[str, Any]]:
    (path,) = [p for p in sessions.rglob(f"*{session_id}*.jsonl") if "trace" not in p.name]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_fork_continues_in_a_new_file_and_leaves_the_original(tmp_path: Path) -> None:
    agent = project(tmp_path)
    sessions = tmp_path / "sessions"
    editor = Editor()

    async def scenario() -> tuple[str, str, list[dict[str, Any]]]:
        async with serving(agent, "--session-dir", str(sessions), editor=editor) as acp:
            original = await acp.start(tmp_path / "work")
            await acp.prompt(original, "Plan the fix.")
            before = records(sessions, original)
            forked = await acp.conn.fork_session(cwd=str(tmp_path / "work"), session_id=original)
            fork = forked.session_id
            assert forked.modes is not None and forked.modes.current_mode_id == "default"
            await editor.until(
                lambda: any(
                    isinstance(u, AgentPlanUpdate) for sid, u in editor.updates if sid == fork
                ),
                "the fork's plan",
            )
            assert (await acp.prompt(fork, "Go on.")).stop_reason == "end_turn"
            assert records(sessions, original) == before  # the fork wrote elsewhere
            return original, fork, before

    original, fork, before = asyncio.run(scenario())
    assert fork != original
    forked = records(sessions, fork)
    assert forked[0]["parent_session"] == original
    assert forked[0]["forked_from"] == before[-1]["id"]
    prompts = [
        r["message"]["content"]
        for r in forked
        if r["type"] == "message" and r["message"]["role"] == "user"
    ]
    assert prompts == ["Plan the fix.", "Go on."]
    plan = next(u for sid, u in editor.updates if sid == fork and isinstance(u, AgentPlanUpdate))
    assert [(e.content, e.status) for e in plan.entries] == [("Fix the fee", "in_progress")]


def test_what_cannot_be_forked_is_the_requests_error(tmp_path: Path) -> None:
    agent = project(tmp_path)

    async def scenario(*args: str) -> RequestError:
        async with serving(agent, *args) as acp:
            answer = await acp.conn.initialize(protocol_version=1)
            caps = answer.agent_capabilities
            recorded = "--no-session" not in args
            assert caps is not None and caps.session_capabilities is not None
            assert (caps.session_capabilities.fork is not None) == recorded
            with pytest.raises(RequestError) as raised:
                await acp.conn.fork_session(cwd="/", session_id="nope")
            return raised.value

    missing = asyncio.run(scenario("--session-dir", str(tmp_path / "sessions")))
    assert missing.code == -32002
    unrecorded = asyncio.run(scenario("--no-session"))
    assert unrecorded.code == -32601
    assert "records no sessions" in str(unrecorded)
