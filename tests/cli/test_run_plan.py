"""The plan tool from the command line (issue 27): `validate` knows the `todo` set,
`render` shows the tool, `run` prints the plan compactly, `run --json` has the event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import assemble

SCRIPT = """\
- tool_calls:
  - name: todo_write
    arguments:
      todos:
        - {content: Read the code, status: completed}
        - {content: "Fix the fee \\u001b[31m", status: in_progress, priority: high}
        - {content: Run the tests, status: pending}
- text: Planned.
"""


def project(root: Path, sets: str = "[readonly, todo]") -> Path:
    (root / "work").mkdir(exist_ok=True)
    (root / "script.yaml").write_text(SCRIPT)
    path = root / "agent.yaml"
    path.write_text(
        "version: 1\nname: planner\nidentity: You plan.\nmodel: scripted:script.yaml\n"
        f"workspace: work\ntools:\n  sets: {sets}\n"
    )
    return path


def test_validate_and_render_know_the_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = project(tmp_path)
    assert assemble(capsys, "validate", str(agent)).code == 0
    rendered = assemble(capsys, "render", "--dry-run", str(agent))
    assert "- todo_write: Write the task plan (the whole list each time)" in rendered.out
    wrong = assemble(capsys, "validate", str(project(tmp_path, "[readonly, todos]")))
    assert wrong.code != 0
    assert "agent.yaml:7:" in wrong.out + wrong.err


def test_run_prints_the_plan_and_json_has_the_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = project(tmp_path)
    shown = assemble(capsys, "run", str(agent), "--trust", "--no-session", "-p", "Plan.")
    assert shown.code == 0
    lines = shown.err.splitlines()
    start = lines.index("plan 1/3 done")
    assert lines[start : start + 4] == [
        "plan 1/3 done",
        "  ✓ Read the code",
        "  ▸ Fix the fee \\x1b[31m (high)",  # what a model writes is never a terminal code
        "  · Run the tests",
    ]
    streamed = assemble(
        capsys, "run", str(agent), "--trust", "--no-session", "--json", "-p", "Plan."
    )
    events = [json.loads(line) for line in streamed.out.splitlines()]
    plan = next(e for e in events if e["type"] == "plan")
    assert [(e["content"], e["status"], e["priority"]) for e in plan["entries"]] == [
        ("Read the code", "completed", "medium"),
        ("Fix the fee \x1b[31m", "in_progress", "high"),
        ("Run the tests", "pending", "medium"),
    ]
    kinds = [e["type"] for e in events]
    assert kinds.index("plan") == kinds.index("tool_result") + 1
