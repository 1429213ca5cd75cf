"""Issue 20, item 21: an eval file is as untrusted as a manifest, and bounded like one.

- `answer_matches` ran Python's `re` in the evaluation's own process: `^(a+)+$` against
  an answer of forty `a`s and a `!` ran for hours holding the GIL, past every timeout.
  It now runs in the worker `grep` uses, killed after `check_timeout`, and a check that
  ran out of time is recorded as failed, with evidence.
- `prompt_file` and `tasks_file` could name any file (`/home/me/.ssh/id_rsa`,
  `../../elsewhere`), whose text then went to the model. They now resolve inside the
  eval file's directory, the agent's directory or the workspace, or `validate` says no.
- `workspace: /` or the home directory was accepted silently; it warns as a manifest's.
- A task that is a string, or a path with a 256-byte component, was an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from clirun import Outcome, assemble

AGENT = (
    "version: 1\nname: tester\nidentity: You answer.\nmodel: scripted:scripts/reply.yaml\n"
    "workspace: ws\ntools: {sets: [readonly]}\n"
)
LONG = "x" * 256


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "ws").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "evals").mkdir()
    (root / "prompts").mkdir()
    (root / "agent.yaml").write_text(AGENT)
    (root / "scripts" / "reply.yaml").write_text(yaml.safe_dump([{"text": "a" * 40 + "!"}]))
    (root / "prompts" / "ask.md").write_text("Answer with many a's.\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("PRIVATE KEY MATERIAL\n")
    (tmp_path / "outside" / "tasks.jsonl").write_text('{"prompt": "hi"}\n')
    monkeypatch.chdir(root)
    return root


def eval_file(project: Path, body: dict[str, object], name: str = "t") -> Path:
    path = project / "evals" / f"{name}.eval.yaml"
    data = {"version": 1, "agent": "../agent.yaml", **body}
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    return path


def validate(capsys: pytest.CaptureFixture[str], path: Path) -> Outcome:
    outcome = assemble(capsys, "validate", str(path))
    assert "internal error" not in outcome.out + outcome.err, outcome.out + outcome.err
    return outcome


# -- answer_matches is bounded -----------------------------------------------------------


def test_a_backtracking_answer_pattern_is_stopped_and_recorded_as_failed(project: Path) -> None:
    path = eval_file(
        project,
        {
            "defaults": {"check_timeout": 2},
            "tasks": [{"id": "redos", "prompt": "hi", "checks": [{"answer_matches": "^(a+)+$"}]}],
        },
    )
    out = project / "results.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "eval", str(path), "--trust", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=project,
        env=dict(os.environ),
    )  # fmt: skip  (the timeout guards the suite against the old behaviour: hours)
    assert done.returncode == 1, done.stdout + done.stderr
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["status"] == "failed"
    [check] = record["checks"]
    assert check["kind"] == "answer_matches" and check["passed"] is False
    assert check["evidence"].startswith("timed out after 2 s (check_timeout)")
    assert "'aaaa" in check["evidence"]  # the answer it ran on


# -- prompt_file and tasks_file stay in the project ---------------------------------------


@pytest.mark.parametrize(
    "written", ["../../outside/secret.md", "{outside}/secret.md", "link-out.md"]
)
def test_a_prompt_file_outside_the_project_is_refused(
    written: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = project.parent / "outside"
    os.symlink(outside / "secret.md", project / "evals" / "link-out.md")
    path = eval_file(
        project, {"tasks": [{"id": "t", "prompt_file": written.format(outside=outside)}]}
    )
    outcome = validate(capsys, path)
    assert outcome.code == 1
    assert "t.eval.yaml:5:16: error: the prompt file " in outcome.out, outcome.out
    assert "is outside the eval file's directory, the agent's directory and the workspace" in (
        outcome.out
    )
    assert "PRIVATE KEY" not in outcome.out


def test_a_tasks_file_outside_the_project_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = eval_file(project, {"tasks_file": "../../outside/tasks.jsonl"})
    outcome = validate(capsys, path)
    assert outcome.code == 1
    assert "error: the tasks file ../../outside/tasks.jsonl is outside" in outcome.out


def test_a_prompt_file_named_by_a_tasks_file_is_confined_too(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = project.parent / "outside" / "secret.md"
    (project / "evals" / "tasks.jsonl").write_text(
        json.dumps({"prompt": "fine"}) + "\n" + json.dumps({"prompt_file": str(secret)}) + "\n"
    )
    outcome = validate(capsys, eval_file(project, {"tasks_file": "tasks.jsonl"}))
    assert outcome.code == 1
    assert "tasks.jsonl:2:" in outcome.out and "is outside" in outcome.out


def test_files_in_the_project_are_accepted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "ws" / "task.md").write_text("From the workspace.\n")
    (project / "evals" / "here.md").write_text("Beside the eval file.\n")
    tasks = [
        {"id": "a", "prompt_file": "../prompts/ask.md"},  # the agent's directory
        {"id": "b", "prompt_file": "../ws/task.md"},
        {"id": "c", "prompt_file": "here.md"},
    ]
    outcome = validate(capsys, eval_file(project, {"tasks": tasks}))
    assert outcome.code == 0, outcome.out


# -- the workspace ------------------------------------------------------------------------


def test_the_root_directory_as_eval_workspace_warns(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = eval_file(project, {"workspace": "/", "tasks": [{"id": "t", "prompt": "hi"}]})
    outcome = validate(capsys, path)
    assert "t.eval.yaml:3:12: warning: the workspace is the root directory (/)" in outcome.out
    assert assemble(capsys, "validate", "--strict", str(path)).code == 1


def test_the_home_directory_as_eval_workspace_warns(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(project.parent))
    home = str(project.parent)
    path = eval_file(project, {"workspace": home, "tasks": [{"id": "t", "prompt": "hi"}]})
    outcome = validate(capsys, path)
    assert f"warning: the workspace is your home directory ({project.parent.resolve()})" in (
        outcome.out
    )


# -- shapes that were internal errors -----------------------------------------------------


def test_a_task_that_is_a_string_is_a_located_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = validate(capsys, eval_file(project, {"tasks": ["Fix the bug."]}))
    assert outcome.code == 1
    assert "t.eval.yaml:4:3: error:" in outcome.out and "[tasks[0]]" in outcome.out


@pytest.mark.parametrize(
    "body",
    [
        {"agent": LONG, "tasks": [{"id": "t", "prompt": "hi"}]},
        {"workspace": LONG, "tasks": [{"id": "t", "prompt": "hi"}]},
        {"tasks_file": LONG},
        {"tasks": [{"id": "t", "prompt_file": LONG}]},
        {"tasks": [{"id": "t", "prompt": "hi", "model": f"scripted:{LONG}"}]},
        {"defaults": {"model": f"scripted:{LONG}"}, "tasks": [{"id": "t", "prompt": "hi"}]},
    ],
    ids=["agent", "workspace", "tasks_file", "prompt_file", "model", "defaults.model"],
)
def test_a_256_byte_name_is_a_located_error(
    body: dict[str, object], project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = validate(capsys, eval_file(project, body))
    assert outcome.code == 1
    assert "t.eval.yaml:" in outcome.out
    assert "256 bytes long; file systems allow at most 255 bytes per name" in outcome.out
