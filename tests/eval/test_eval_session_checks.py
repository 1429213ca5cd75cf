"""`files_equal` and `tool_sequence` (the checks a converted session starts with, and
any eval may use), passing and failing with evidence that names the first difference;
and `messages` (steers and follow-ups) in a hand-written task."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project, answer, call


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_eval(project: Project, capsys: pytest.CaptureFixture[str], file: Path) -> dict:
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    assert "Traceback" not in outcome.err
    [record] = results(out)
    return record


def test_files_equal_and_tool_sequence_pass(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.root / "expected-app.py").write_text("VALUE = 2\n")
    model = project.script(
        "pass",
        [
            call("edit", "", path="src/app.py", old_text="VALUE = 1", new_text="VALUE = 2"),
            call("write", "", path="out.txt", content="made\n"),
            call("bash", "", command="rm notes.txt"),
            answer("Done."),
        ],
    )
    file = project.eval_file(
        [
            {
                "id": "t",
                "prompt": "Go.",
                "model": model,
                "checks": [
                    {
                        "files_equal": {
                            "src/app.py": {"file": "expected-app.py"},
                            "out.txt": "made\n",
                            "notes.txt": None,
                            "tests/test_app.py": {
                                "sha256": hashlib.sha256(b"from src.app import VALUE\n").hexdigest()
                            },
                        }
                    },
                    {"tool_sequence": ["edit", "write", "bash"]},
                ],
            }
        ]
    )
    record = run_eval(project, capsys, file)
    assert record["status"] == "passed", record
    assert [(c["kind"], c["passed"], c["evidence"]) for c in record["checks"]] == [
        ("files_equal", True, "4 files as expected"),
        ("tool_sequence", True, "3 calls in order: edit write bash"),
    ]


def test_files_equal_and_tool_sequence_name_the_first_difference(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    model = project.script(
        "fail",
        [call("write", "", path="out.txt", content="one\nTWO\nthree\n"), answer("Done.")],
    )
    file = project.eval_file(
        [
            {
                "id": "t",
                "prompt": "Go.",
                "model": model,
                "checks": [
                    {
                        "files_equal": {
                            "out.txt": "one\ntwo\nthree\n",
                            "missing.txt": "x",
                            "notes.txt": None,
                        }
                    },
                    {"tool_sequence": ["write", "bash"]},
                    {"tool_sequence": ["read"]},
                    {"tool_sequence": []},
                ],
            }
        ]
    )
    record = run_eval(project, capsys, file)
    assert record["status"] == "failed"
    evidence = [c["evidence"] for c in record["checks"]]
    assert evidence[0] == (
        "3 of 3 files differ: out.txt differs at line 2: expected `two`, got `TWO`; "
        "missing.txt is missing; notes.txt exists and should not"
    )
    assert evidence[1] == "1 call, expected 2: `bash` never came; calls: write"
    assert evidence[2] == "call 1 is `write`, expected `read`; calls: write"
    assert evidence[3] == "1 call, expected 0: call 1 `write` is extra; calls: write"


def test_files_equal_paths_are_checked_when_the_file_is_read(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file(
        [
            {
                "id": "t",
                "prompt": "Go.",
                "checks": [
                    {"files_equal": {"../outside.txt": "x", "a.txt": {"file": "nowhere.txt"}}}
                ],
            }
        ]
    )
    outcome = assemble(capsys, "validate", str(file))
    assert outcome.code != 0
    said = outcome.out + outcome.err
    assert "`../outside.txt` must be a relative path inside the workspace" in said
    assert "the expected content of a.txt nowhere.txt does not exist" in said


def test_a_task_steers_and_follows_up_in_order(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    model = project.script(
        "talk",
        [
            call("read", "", path="notes.txt"),
            answer("First answer."),
            answer("Answer to the follow-up."),
            answer("Answer to the second prompt."),
        ],
    )
    file = project.eval_file(
        [
            {
                "id": "t",
                "prompt": "Read the notes.",
                "model": model,
                "messages": [
                    {"steer": "Only the first line.", "after_turn": 1},
                    {"follow_up": "Anything else?"},
                    {"prompt": "And now?"},
                ],
                "checks": [{"answer_contains": "second prompt"}],
            }
        ]
    )
    record = run_eval(project, capsys, file)
    assert record["status"] == "passed", record
    session = [json.loads(line) for line in Path(record["session"]).read_text().splitlines()]
    users = [
        entry["message"]["content"]
        for entry in session
        if entry.get("type") == "message" and entry["message"].get("role") == "user"
    ]
    assert users == ["Read the notes.", "Only the first line.", "Anything else?", "And now?"]
