"""`assemble eval` with a sandbox: `command:` checks run confined like the agent, and
closing a task's agent ends every process its commands started before the checks run."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from clirun import assemble
from escapes import needs_landlock, needs_seccomp, wait_for

from assembler.tools.base import ToolContext
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.processes import ProcessScope

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))
from eval_project import AGENT, Project, answer, call, make_project

pytestmark = [needs_landlock, needs_seccomp]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "project")


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def evaluate(
    project: Project, capsys: pytest.CaptureFixture[str], checks: list[dict], out: str
) -> dict:
    file = project.eval_file([{"id": "t", "prompt": "?", "checks": checks}])
    out_file = project.root / out
    assemble(capsys, "eval", str(file), "--trust", "--out", str(out_file))
    [record] = results(out_file)
    return record


def test_a_command_check_runs_in_the_agents_sandbox(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    checks = [
        {"command": "echo ok > inside.txt && cat inside.txt"},
        {"command": f"echo x > {outside}"},
    ]
    # the control: without a sandbox, the second check writes outside the copy
    record = evaluate(project, capsys, checks, "control.jsonl")
    assert [c["passed"] for c in record["checks"]] == [True, True]
    assert outside.exists()
    outside.unlink()
    sandbox = "sandbox: {filesystem: workspace-write, network: off}\n"
    (project.root / "agent.yaml").write_text(AGENT + sandbox)
    record = evaluate(project, capsys, checks, "confined.jsonl")
    first, second = record["checks"]
    assert first["passed"]
    assert not second["passed"]
    assert "Permission denied" in second["evidence"]
    assert not outside.exists()


def test_closing_the_tasks_agent_ends_its_background_jobs_before_the_checks(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # A job the run left behind writes `late.txt` a second later; the check looks
    # after two seconds. It must find nothing: the job ended with the task's agent.
    job = "(sleep 1; echo late > late.txt) > /dev/null 2>&1 &"
    # the control: a job nobody stops does write it
    control = ToolContext(workspace=project.workspace, processes=ProcessScope())
    asyncio.run(BASH_TOOL.execute({"command": job}, control))
    assert wait_for((project.workspace / "late.txt").exists, 5)
    (project.workspace / "late.txt").unlink()
    model = project.script("job", [call("bash", command=job), answer("Started.")])
    file = project.eval_file(
        [
            {
                "id": "job",
                "prompt": "?",
                "model": model,
                "checks": [{"command": "sleep 2; test ! -e late.txt"}],
            }
        ]
    )
    out = project.root / "r.jsonl"
    assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    [record] = results(out)
    assert record["checks"][0]["passed"], record["checks"][0]["evidence"]
