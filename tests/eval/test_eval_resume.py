"""Resuming with the same `--out`, `--rerun-failed`, `--repeat` and `--compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project, answer


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def row(output: str, name: str) -> list[str]:
    """The summary table's row for `name`, split into cells."""
    return next(line.split() for line in output.splitlines() if line.split()[:1] == [name])


def keys(path: Path) -> list[tuple[str, int]]:
    return sorted((r["task"], r["repeat"]) for r in results(path))


@pytest.fixture
def three(project: Project) -> Path:
    return project.eval_file([{"id": name, "prompt": "?"} for name in ("a", "b", "c")])


def test_rerunning_with_the_same_out_skips_what_is_recorded(
    project: Project, three: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = project.root / "r.jsonl"
    assert assemble(capsys, "eval", str(three), "--out", str(out)).code == 0
    # an interruption: the last run was never recorded, and its line was cut short
    lines = out.read_text().splitlines()
    lost = json.loads(lines[-1])
    out.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])
    outcome = assemble(capsys, "eval", str(three), "--out", str(out))
    assert outcome.code == 0, outcome.out
    assert outcome.out.splitlines()[0] == (
        f"resuming: 2 of 3 run(s) already in {out}; 1 to do (1 unreadable line(s) skipped)"
    )
    new = results_after_torn_line(out)
    assert [(r["task"], r["repeat"]) for r in new] == [(lost["task"], 1)]
    # the summary covers every run, the resumed ones too
    assert row(outcome.out, "overall")[1:3] == ["3/3", "100%"]
    again = assemble(capsys, "eval", str(three), "--out", str(out))
    assert again.code == 0
    assert again.out.splitlines()[0] == (
        f"resuming: 3 of 3 run(s) already in {out}; 0 to do (1 unreadable line(s) skipped)"
    )


def results_after_torn_line(out: Path) -> list[dict]:
    """The records written after the torn line (which was ended, not glued to them)."""
    lines = out.read_text().splitlines()
    torn = next(i for i, line in enumerate(lines) if not line.endswith("}"))
    return [json.loads(line) for line in lines[torn + 1 :]]


def test_rerun_failed_runs_the_failures_again_and_the_later_record_wins(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flag = tmp_path / "flag"
    file = project.eval_file(
        [
            {"id": "steady", "prompt": "?"},
            {"id": "flaky", "prompt": "?", "checks": [{"command": f"test -f {flag}"}]},
        ]
    )
    out = project.root / "r.jsonl"
    assert assemble(capsys, "eval", str(file), "--out", str(out), "--trust").code == 1
    flag.touch()
    assert assemble(capsys, "eval", str(file), "--out", str(out), "--trust").code == 1  # resumed
    outcome = assemble(capsys, "eval", str(file), "--out", str(out), "--trust", "--rerun-failed")
    assert outcome.code == 0, outcome.out
    assert outcome.out.splitlines()[0] == f"resuming: 1 of 2 run(s) already in {out}; 1 to do"
    assert [(r["task"], r["status"]) for r in results(out)][-1] == ("flaky", "passed")
    assert len(results(out)) == 3  # append-only: the failure stays in the file
    assert row(outcome.out, "overall")[1:3] == ["2/2", "100%"]


def test_rerun_failed_reruns_every_failed_repeat_not_only_the_first(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flag = tmp_path / "flag"
    file = project.eval_file(
        [
            {"id": "steady", "prompt": "?"},
            {"id": "flaky", "prompt": "?", "checks": [{"command": f"test -f {flag}"}]},
        ]
    )
    out = project.root / "r.jsonl"
    args = ["eval", str(file), "--out", str(out), "--trust"]
    assert assemble(capsys, *args, "--repeat", "3").code == 1
    assert [r["status"] for r in results(out) if r["task"] == "flaky"] == ["failed"] * 3
    flag.touch()
    outcome = assemble(capsys, *args, "--rerun-failed")  # no --repeat: the file has three
    assert outcome.code == 0, outcome.out
    assert outcome.out.splitlines()[0] == f"resuming: 3 of 6 run(s) already in {out}; 3 to do"
    assert sorted((r["task"], r["repeat"]) for r in results(out)[6:]) == [
        ("flaky", 1), ("flaky", 2), ("flaky", 3),
    ]  # fmt: skip
    assert row(outcome.out, "overall")[1:3] == ["6/6", "100%"]


def test_repeat_runs_each_task_n_times_and_more_repeats_add_to_a_results_file(
    project: Project, three: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(three), "--out", str(out), "--repeat", "3")
    assert outcome.code == 0
    assert keys(out) == [(t, n) for t in "abc" for n in (1, 2, 3)]
    assert [row(outcome.out, t)[1:3] for t in "abc"] == [["3/3", "100%"]] * 3
    assert row(outcome.out, "overall")[1:3] == ["9/9", "100%"]
    outcome = assemble(capsys, "eval", str(three), "--out", str(out), "--repeat", "4")
    assert outcome.out.splitlines()[0] == f"resuming: 9 of 12 run(s) already in {out}; 3 to do"
    assert keys(out) == [(t, n) for t in "abc" for n in (1, 2, 3, 4)]


def test_a_results_file_of_another_model_is_not_resumed(
    project: Project, three: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = project.root / "r.jsonl"
    assemble(capsys, "eval", str(three), "--out", str(out))
    project.script("other", [answer("Other.")])
    outcome = assemble(
        capsys, "eval", str(three), "--out", str(out), "--model", "scripted:scripts/other.yaml"
    )
    assert outcome.code == 2
    assert "holds a#1 run with the model scripted:scripts/default.yaml" in outcome.err
    assert len(results(out)) == 3


def test_compare_shows_changes_per_task_and_fails_on_a_regression(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.script("good", [answer("The answer is 42.", input_tokens=100, output_tokens=10)])
    project.script("worse", [answer("No idea.", input_tokens=150, output_tokens=20)])
    file = project.eval_file(
        [
            {"id": "knows", "prompt": "?", "checks": [{"answer_contains": "42"}]},
            {"id": "talks", "prompt": "?"},
        ]
    )
    old, new = project.root / "old.jsonl", project.root / "new.jsonl"
    for out, model in ((old, "good"), (new, "worse")):
        assemble(
            capsys, "eval", str(file), "--out", str(out), "--repeat", "2",
            "--model", f"scripted:scripts/{model}.yaml",
        )  # fmt: skip
    outcome = assemble(capsys, "eval", "--compare", str(old), str(new))
    assert outcome.code == 1
    lines = outcome.out.splitlines()
    assert lines[0].split("  ")[0] == "task"
    knows = next(line for line in lines if line.startswith("knows"))
    talks = next(line for line in lines if line.startswith("talks"))
    assert "2/2 (100%) → 0/2 (0%) ▼" in knows
    assert "110 → 170 (+55%)" in knows
    assert "2/2 (100%) → 2/2 (100%)" in talks and "▼" not in talks
    assert lines[-1] == "1 task(s) pass less often than before: knows"
    better = assemble(capsys, "eval", "--compare", str(new), str(old))
    assert better.code == 0
    assert "0/2 (0%) → 2/2 (100%) ▲" in better.out
    assert better.out.splitlines()[-1] == "no task passes less often than before"


def test_compare_shows_tasks_added_and_removed(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    first = project.eval_file([{"id": "gone", "prompt": "?"}, {"id": "kept", "prompt": "?"}])
    old = project.root / "old.jsonl"
    assemble(capsys, "eval", str(first), "--out", str(old))
    second = project.eval_file([{"id": "kept", "prompt": "?"}, {"id": "new", "prompt": "?"}])
    new = project.root / "new.jsonl"
    assemble(capsys, "eval", str(second), "--out", str(new))
    outcome = assemble(capsys, "eval", "--compare", str(old), str(new))
    assert outcome.code == 0
    assert any(
        line.startswith("gone") and "1/1 (100%) (removed)" in line
        for line in outcome.out.splitlines()
    )
    assert any(
        line.startswith("new") and "(new) 1/1 (100%)" in line for line in outcome.out.splitlines()
    )


def test_compare_needs_two_readable_files(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = project.root / "empty.jsonl"
    empty.write_text("not json\n")
    outcome = assemble(capsys, "eval", "--compare", str(empty), str(project.root / "none.jsonl"))
    assert outcome.code == 2
    assert "empty.jsonl holds no readable results" in outcome.err
