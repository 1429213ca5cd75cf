"""Teams on the command line: `agents/team/` (a lead, a reviewer, a test writer) run,
rendered, validated; Ctrl-C and RPC `cancel` reaching a running sub-agent."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from clirun import assemble
from procs import live_processes_with

from assembler.agent import build_agent
from assembler.providers.scripted import load_script
from assembler.testing import ScriptedModel


def lead(shipping: Path) -> Path:
    return shipping / "agents" / "team" / "lead.yaml"


def test_the_team_example_delegates_to_both_children(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = shipping / "sessions"
    result = assemble(
        capsys, "run", str(lead(shipping)), "--session-dir", str(sessions), "--trust",
        "-p", "Review the fee code and add a test for the free-shipping threshold.",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.startswith("The team is done.\n- Review: `shipping_fee` rounds")
    err = result.err.splitlines()
    assert "  [lead/reviewer] → read shipping/fees.py" in err
    assert "  [lead/test_writer] → bash python3 -m unittest tests.test_threshold -v" in err
    # the parent's own results come after everything its children did
    last_child = max(i for i, line in enumerate(err) if line.startswith("  [lead/"))
    assert err[last_child + 1].startswith("← reviewer ok (")
    assert err[last_child + 2].startswith("← test_writer ok (1 lines) Wrote tests/test_threshold")
    # test_writer inherits the lead's workspace: the test landed in the repository
    test_file = shipping / "examples" / "shipping" / "tests" / "test_threshold.py"
    assert "shipping_fee(0.5, 4999)" in test_file.read_text()
    agents = sorted(
        json.loads(p.read_text().splitlines()[0])["agent"]
        for p in sessions.glob("*.jsonl")
        if not p.name.endswith(".trace.jsonl")
    )
    assert agents == ["lead", "reviewer", "test-writer"]


def test_json_output_carries_the_childrens_events_tagged_with_their_path(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(
        capsys, "run", str(lead(shipping)), "--no-session", "--json", "--trust", "-p", "Go."
    )
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    tagged = [e for e in events if e["type"] == "subagent"]
    assert {e["agent"] for e in tagged} == {"lead/reviewer", "lead/test_writer"}
    reviewer = [e["event"] for e in tagged if e["agent"] == "lead/reviewer"]
    assert reviewer[0]["type"] == "run_start"
    assert reviewer[-1]["type"] == "run_end" and reviewer[-1]["reason"] == "completed"
    assert [e["call"]["name"] for e in reviewer if e["type"] == "tool_call"] == ["read"]


def test_render_shows_the_sub_agent_tools_in_the_parents_catalog_and_schemas(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "render", "--dry-run", str(lead(shipping)))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    tools = lines.index("## tools")
    assert lines[tools + 1 : tools + 7] == [
        "- read: Read a file's contents (text; line ranges with offset/limit)",
        "- grep: Search file contents with a regular expression (path:line: text)",
        "- find: Find files by glob pattern (`**/*.py`)",
        "- ls: List a directory's entries",
        "- reviewer: Reviews code in the shipping repository and lists its problems with "
        "file and line, most serious first.",
        "- test_writer: Writes a unittest for a rule you describe, in a new file under "
        "tests/, runs it and reports.",
    ]
    schemas = lines.index("---- tool schemas (6) ----")
    assert lines[schemas + 9] == "reviewer(task: string)  [agent:reviewer.yaml]"
    assert lines[schemas + 11] == "test_writer(task: string)  [agent:test-writer.yaml]"
    assert "dry run:" not in result.err  # nothing about a sub-agent is unknown


@pytest.mark.parametrize(
    ("path", "script"), [("reviewer", "reviewer.script.yaml"), ("test_writer", None)]
)
def test_render_agent_shows_the_prompt_of_the_childs_first_real_request(
    shipping: Path, capsys: pytest.CaptureFixture[str], path: str, script: str | None
) -> None:
    team = shipping / "agents" / "team"
    rendered = assemble(
        capsys, "render", "--dry-run", "--prompt-only", "--agent", path, str(lead(shipping))
    )
    assert rendered.code == 0, rendered.err
    child_script = team / (script or "test-writer.script.yaml")
    child_model = ScriptedModel([step.message for step in load_script(child_script)])
    agent = build_agent(lead(shipping), session_dir=shipping / "sessions", trust=True)
    subagent = next(s for s in agent.subagents if s.name == path)
    subagent.model = lambda: child_model

    async def main() -> None:
        try:
            await agent.prompt("Go.")
        finally:
            await agent.aclose()

    asyncio.run(main())
    assert rendered.out == child_model.requests[0].system


def test_render_agent_names_the_sub_agents_there_are(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "render", "--dry-run", "--agent", "nobody", str(lead(shipping)))
    assert result.code == 1
    assert "`lead` has no sub-agent `nobody` (sub-agents: `reviewer`, `test_writer`)" in result.err


def test_validate_checks_the_team_as_a_whole(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "validate", str(shipping / "agents" / "team"))
    assert (result.code, result.out) == (0, "3 manifests valid\n")
    reviewer = shipping / "agents" / "team" / "reviewer.yaml"
    reviewer.write_text(reviewer.read_text().replace("max_turns: 8", "max_turns: eight"))
    result = assemble(capsys, "validate", str(lead(shipping)))
    assert result.code == 1
    assert result.out.splitlines()[:2] == [
        f"{lead(shipping)}:15:14: error: sub-agent reviewer.yaml has 1 error "
        "(reported at its own lines) [tools.sets[1].agent]",
        f"{reviewer}:14:14: error: expected an integer, got a string [limits.max_turns]",
    ]


# -- cancellation ------------------------------------------------------------------------


def slow_team(tmp_path: Path, seconds: str) -> Path:
    """A lead whose child runs `sleep SECONDS` in bash."""
    (tmp_path / "lead.yaml").write_text(
        "version: 1\nname: lead\nidentity: You delegate.\nmodel: scripted:lead.script.yaml\n"
        "tools:\n  sets:\n    - agent: worker.yaml\n"
    )
    (tmp_path / "lead.script.yaml").write_text(
        "- tool_calls: [{name: worker, arguments: {task: wait}}]\n- text: after the cancel\n"
    )
    (tmp_path / "worker.yaml").write_text(
        "version: 1\nname: worker\nidentity: You wait.\nmodel: scripted:worker.script.yaml\n"
        "tools:\n  sets: [coding]\n"
    )
    (tmp_path / "worker.script.yaml").write_text(
        f"- tool_calls: [{{name: bash, arguments: {{command: sleep {seconds}}}}}]\n"
    )
    return tmp_path / "lead.yaml"


def wait_for(marker: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30  # a guard against hanging, not a timing check
    while not live_processes_with(marker) and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.05)
    assert live_processes_with(marker), "the sub-agent never started its command"


def spawn(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "assembler", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=cwd,
    )


def test_ctrl_c_stops_the_sub_agent_and_its_command(tmp_path: Path) -> None:
    seconds = f"30.{uuid.uuid4().int % 10**9:09d}"
    manifest = slow_team(tmp_path, seconds)
    process = spawn(
        "run", str(manifest), "--session-dir", str(tmp_path / "s"), "--trust", cwd=tmp_path
    )
    assert process.stdin is not None
    try:
        process.stdin.write("start\n")
        process.stdin.flush()
        wait_for(seconds, process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate("next\n/exit\n", timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "  [lead/worker] → bash sleep" in err
    assert "(turn cancelled)" in err
    assert "after the cancel" in out  # the lead's session goes on
    assert live_processes_with(seconds) == []


def test_rpc_cancel_stops_the_sub_agent_and_its_command(tmp_path: Path) -> None:
    seconds = f"30.{uuid.uuid4().int % 10**9:09d}"
    manifest = slow_team(tmp_path, seconds)
    process = spawn("rpc", str(manifest), "--no-session", "--trust", cwd=tmp_path)
    assert process.stdin is not None and process.stdout is not None
    replies: list[dict[str, object]] = []

    def read_until(done: str) -> None:
        assert process.stdout is not None
        while line := process.stdout.readline():
            replies.append(json.loads(line))
            if done in line:
                return
        raise AssertionError(f"the server exited early: {replies}")

    try:
        process.stdin.write(json.dumps({"id": 1, "method": "prompt", "params": {"text": "Go."}}))
        process.stdin.write("\n")
        process.stdin.flush()
        wait_for(seconds, process)
        process.stdin.write(json.dumps({"id": 2, "method": "cancel"}) + "\n")
        process.stdin.flush()
        read_until('"Cancelled"')
        assert live_processes_with(seconds) == []
        process.stdin.close()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert {"id": 2, "result": {"cancelled": True}} in replies
    tagged = [r["event"] for r in replies if isinstance(r.get("event"), dict)]
    assert any(e.get("type") == "subagent" and e.get("agent") == "lead/worker" for e in tagged)  # type: ignore[union-attr]
    assert live_processes_with(seconds) == []
