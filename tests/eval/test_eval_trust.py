"""Trust is decided once, before any task runs, for the agent tree and the checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project

REPO = Path(__file__).resolve().parents[2]


def test_check_commands_need_trust_even_when_the_agent_needs_none(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    file = project.eval_file(
        [{"id": "t", "prompt": "?", "checks": [{"command": f"touch {marker}"}]}]
    )
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--out", str(out))
    assert outcome.code == 2
    assert f"{project.root} is not a trusted directory" in outcome.err
    assert f"check command `touch {marker}` (task t)" in outcome.err
    assert not marker.exists() and not out.exists()
    assert assemble(capsys, "trust", "add", str(project.root)).code == 0
    assert assemble(capsys, "eval", str(file), "--out", str(out)).code == 0
    assert marker.exists()


def test_the_agent_trees_code_needs_trust_before_any_task(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = shipping / "r.jsonl"
    outcome = assemble(
        capsys, "eval", str(shipping / "evals" / "shipping.eval.yaml"), "--out", str(out)
    )
    assert outcome.code == 2
    assert "extension file extensions/protect_tests.py" in outcome.err
    assert not out.exists()


def test_an_eval_without_project_code_needs_no_trust(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file([{"id": "t", "prompt": "?", "checks": [{"answer_contains": "Done"}]}])
    assert assemble(capsys, "eval", str(file), "--out", str(project.root / "r.jsonl")).code == 0
