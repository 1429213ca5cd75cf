"""Every check kind, passing and failing, with the evidence a person reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project, answer, call


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_check_kind_passes_with_evidence(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    model = project.script(
        "pass",
        [
            call("write", "Writing it.", path="out.txt", content="made\n"),
            answer("All done: 42 items written.", input_tokens=120, output_tokens=9),
        ],
    )
    file = project.eval_file(
        [
            {
                "id": "all-pass",
                "prompt": "Write out.txt.",
                "model": model,
                "checks": [
                    {"command": "test -f out.txt && echo present"},
                    {"unchanged": ["src/**", "notes.txt"]},
                    {"answer_contains": "42 items"},
                    {"answer_matches": r"(\d+) items"},
                    {"tool_called": "write"},
                    {"tool_not_called": "bash"},
                ],
            }
        ]
    )
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    assert outcome.code == 0, outcome.out + outcome.err
    [record] = results(out)
    assert record["status"] == "passed"
    assert [(c["kind"], c["passed"], c["evidence"]) for c in record["checks"]] == [
        ("command", True, "exit 0"),
        ("unchanged", True, "2 files unchanged"),
        ("answer_contains", True, "found at character 10: 'All done: 42 items written.'"),
        ("answer_matches", True, "matched '42 items' at character 10"),
        ("tool_called", True, "called once: write(out.txt) ran"),
        ("tool_not_called", True, "never called; calls: write x1"),
    ]
    assert record["usage"]["input_tokens"] == 120 and record["usage"]["output_tokens"] == 9
    assert record["answer"] == "All done: 42 items written."
    assert record["turns"] == 2
    assert record["tool_calls"] == [{"name": "write", "argument": "out.txt", "outcome": "ran"}]


def test_every_check_kind_fails_with_evidence(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    model = project.script(
        "fail",
        [
            call("edit", path="src/app.py", old_text="VALUE = 1", new_text="VALUE = 2"),
            call("write", path="src/new.py", content="x = 1\n"),
            call("bash", command="rm notes.txt"),
            answer("nothing here"),
        ],
    )
    file = project.eval_file(
        [
            {
                "id": "all-fail",
                "prompt": "Break things.",
                "model": model,
                "checks": [
                    {"command": "echo checking; echo 'VALUE is not 3' >&2; exit 3"},
                    {"unchanged": ["src/**", "notes.txt"]},
                    {"answer_contains": "42"},
                    {"answer_matches": r"\d"},
                    {"tool_called": "grep"},
                    {"tool_not_called": "edit"},
                ],
            }
        ]
    )
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    assert outcome.code == 1
    [record] = results(out)
    assert record["status"] == "failed" and record["reason"] == "completed"
    assert [(c["kind"], c["passed"], c["evidence"]) for c in record["checks"]] == [
        ("command", False, "exit 3: VALUE is not 3\nchecking\nVALUE is not 3"),
        ("unchanged", False, "changed: src/app.py; removed: notes.txt; added: src/new.py"),
        ("answer_contains", False, "not in the answer (12 characters): 'nothing here'"),
        ("answer_matches", False, "no match in the answer (12 characters): 'nothing here'"),
        ("tool_called", False, "never called; calls: edit x1, write x1, bash x1"),
        ("tool_not_called", False, "called once: edit(src/app.py) ran"),
    ]
    # the summary says why, in one line per run that did not pass
    assert "FAIL all-fail#1: command: echo checking; " in outcome.out
    assert "exit 3: VALUE is not 3" in outcome.out


def test_a_blocked_call_counts_as_called(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tool_called`/`tool_not_called` judge what the model did; the guard that
    blocked the call is shown in the evidence."""
    (project.root / "no_writes.py").write_text(
        "from assembler.extensions import Block\n\n\n"
        "def setup(api, options):\n"
        "    @api.on('tool_call')\n"
        "    def no_writes(event):\n"
        "        return Block('no writes here') if event.name == 'write' else None\n"
    )
    agent = project.root / "agent.yaml"
    agent.write_text(agent.read_text() + "extensions:\n  - path: no_writes.py\n")
    model = project.script("blocked", [call("write", path="x.txt", content="x"), answer("ok")])
    file = project.eval_file(
        [
            {
                "id": "blocked",
                "prompt": "Write x.",
                "model": model,
                "checks": [{"tool_not_called": "write"}, {"unchanged": "x.txt"}],
            }
        ]
    )
    out = project.root / "r.jsonl"
    assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    [record] = results(out)
    not_called, unchanged = record["checks"]
    assert not not_called["passed"]
    assert (
        not_called["evidence"] == "called once: write(x.txt) blocked by no_writes: no writes here"
    )
    assert unchanged == {
        "kind": "unchanged",
        "check": "unchanged: x.txt",
        "passed": True,
        "evidence": "0 files unchanged",
    }


def test_a_command_check_that_hangs_is_stopped(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file(
        [
            {
                "id": "slow-check",
                "prompt": "Hi.",
                "checks": [{"command": "echo started; sleep 30.7311", "timeout": 0.5}],
            }
        ]
    )
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    assert outcome.code == 1
    [record] = results(out)
    [check] = record["checks"]
    assert check["evidence"] == "timed out after 0.5 s: started\nstarted"
    from procs import live_processes_with

    assert live_processes_with("sleep 30.7311") == []
