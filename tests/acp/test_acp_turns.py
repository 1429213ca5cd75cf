"""Turns over ACP: `session/cancel` stops a running turn (its command processes too),
a prompt sent while another runs waits for it, and `_assembler/steer` redirects the
running turn."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from acp_harness import Editor, manifest, serving, wait_for_process
from procs import live_processes_with


@pytest.fixture
def sleeper() -> str:
    """A `sleep` no other test (or other run of this one) starts."""
    return f"sleep 30.{os.getpid()}29"


# Waits (at most about 30 s) until the test creates `go` in the workspace.
WAIT_FOR_GO = "for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done; echo went"


def test_cancel_stops_the_turn_and_its_command(tmp_path: Path, sleeper: str) -> None:
    agent = manifest(
        tmp_path,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{sleeper}'}}}}]\n"
        "- text: Still here.\n",
    )
    editor = Editor()

    async def scenario() -> tuple[str, str, str]:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            turn = asyncio.create_task(acp.prompt(session, "Wait."))
            await wait_for_process(sleeper)
            await acp.conn.cancel(session_id=session)
            stopped = await asyncio.wait_for(turn, 60)
            left = live_processes_with(sleeper)
            assert left == [], left
            again = await acp.prompt(session, "Are you there?")
            return session, stopped.stop_reason, again.stop_reason

    session, stopped, again = run(scenario())
    assert (stopped, again) == ("cancelled", "end_turn")
    (bash,) = editor.starts(session)
    (ended,) = editor.progress(session)
    assert (ended.tool_call_id, ended.status) == (bash.tool_call_id, "failed")
    assert editor.text(session) == "Still here."
    assert live_processes_with(sleeper) == []


def test_closing_the_connection_stops_a_running_turn(tmp_path: Path, sleeper: str) -> None:
    """The editor quits mid-turn: the agent process ends by itself (the harness checks
    its exit code) and leaves no command behind."""
    agent = manifest(
        tmp_path, f"- tool_calls: [{{name: bash, arguments: {{command: '{sleeper}'}}}}]\n"
    )

    async def scenario() -> None:
        async with serving(agent, "--no-session") as acp:
            session = await acp.start()
            asyncio.create_task(acp.prompt(session, "Wait."))  # noqa: RUF006 (ends with the connection)
            await wait_for_process(sleeper)

    run(scenario())
    assert live_processes_with(sleeper) == []


def test_a_prompt_sent_while_another_runs_waits_for_it(tmp_path: Path) -> None:
    agent = manifest(
        tmp_path,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n"
        "- text: First done.\n"
        "- text: Second done.\n",
    )
    editor = Editor()
    go = tmp_path / "work" / "go"

    async def scenario() -> tuple[str, list[str]]:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            first = asyncio.create_task(acp.prompt(session, "First."))
            await editor.until(lambda: editor.starts(session), "the first turn's tool call")
            second = asyncio.create_task(acp.prompt(session, "Second."))
            await asyncio.sleep(0.2)
            assert not second.done()
            go.touch()
            answers = await asyncio.wait_for(asyncio.gather(first, second), 60)
            return session, [a.stop_reason for a in answers]

    session, stops = run(scenario())
    assert stops == ["end_turn", "end_turn"]
    assert editor.text(session) == "First done.Second done."


def test_cancel_also_stops_the_turns_waiting(tmp_path: Path, sleeper: str) -> None:
    agent = manifest(
        tmp_path,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{sleeper}'}}}}]\n- text: Fresh.\n",
    )
    editor = Editor()

    async def scenario() -> list[str]:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            first = asyncio.create_task(acp.prompt(session, "Wait."))
            await wait_for_process(sleeper)
            second = asyncio.create_task(acp.prompt(session, "Then this."))
            await asyncio.sleep(0.2)
            await acp.conn.cancel(session_id=session)
            answers = await asyncio.wait_for(asyncio.gather(first, second), 60)
            third = await acp.prompt(session, "Now?")
            return [a.stop_reason for a in (*answers, third)]

    assert run(scenario()) == ["cancelled", "cancelled", "end_turn"]
    assert live_processes_with(sleeper) == []


def test_steer_redirects_the_running_turn(tmp_path: Path) -> None:
    agent = manifest(
        tmp_path,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n"
        "- text: Steered.\n",
    )
    sessions = tmp_path / "sessions"
    editor = Editor()
    go = tmp_path / "work" / "go"

    async def scenario() -> tuple[str, dict[str, object], dict[str, object], str]:
        async with serving(agent, "--session-dir", str(sessions), editor=editor) as acp:
            session = await acp.start()
            idle = await acp.conn.ext_method("assembler/steer", {"sessionId": session, "text": "x"})
            turn = asyncio.create_task(acp.prompt(session, "Work."))
            await editor.until(lambda: editor.starts(session), "the tool call")
            steered = await acp.conn.ext_method(
                "assembler/steer", {"sessionId": session, "text": "Use the other file."}
            )
            go.touch()
            answer = await asyncio.wait_for(turn, 60)
            return session, idle, steered, answer.stop_reason

    session, idle, steered, stop = run(scenario())
    assert idle == {"steered": False}
    assert steered == {"steered": True}
    assert stop == "end_turn"
    assert editor.user_text(session) == ["Use the other file."]
    records = [
        json.loads(line) for line in (sessions / f"{session}.jsonl").read_text().splitlines()
    ]
    said = [
        (r["message"]["role"], r["message"].get("content", r["message"].get("text")))
        for r in records
        if "message" in r
    ]
    # delivered after the running command, before the model's next request
    assert [role for role, _ in said] == ["user", "assistant", "tool", "user", "assistant"]
    assert said[-2:] == [("user", "Use the other file."), ("assistant", "Steered.")]


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]
