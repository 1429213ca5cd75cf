"""Eval results read defensively, summarised per task, two files compared."""

from __future__ import annotations

from pathlib import Path

from view_corpus import results_file

from assembler.view.results import compare, looks_like_results, read


def test_summary_per_task_and_overall(tmp_path: Path) -> None:
    path = results_file(
        tmp_path / "r.jsonl",
        {"fix": ["passed", "passed", "failed"], "explain": ["error"]},
        cost=0.01,
    )
    with path.open("a") as handle:
        handle.write('not json\n{"no": "task"}\n')
    results = read(path)
    assert results.unreadable == 2
    fix, explain = results.tasks
    assert (fix.task, fix.passed, fix.runs, fix.errors) == ("fix", 2, 3, 0)
    assert (explain.passed, explain.errors) == (0, 1)
    assert fix.p50 == 0.2 and fix.p95 == 0.3
    assert fix.cost is not None and abs(fix.cost - 0.03) < 1e-9
    assert results.overall is not None and results.overall.runs == 4
    assert looks_like_results(path)


def test_a_later_line_of_the_same_run_wins(tmp_path: Path) -> None:
    path = results_file(tmp_path / "r.jsonl", {"fix": ["failed"]})
    again = results_file(tmp_path / "again.jsonl", {"fix": ["passed"]})
    path.write_text(path.read_text() + again.read_text())
    assert read(path).tasks[0].passed == 1


def test_compare_puts_what_got_worse_first(tmp_path: Path) -> None:
    old = read(results_file(tmp_path / "old.jsonl",
                            {"a": ["passed"], "b": ["failed"], "c": ["passed"], "d": ["passed"]}))  # fmt: skip
    new = read(results_file(tmp_path / "new.jsonl",
                            {"a": ["passed"], "b": ["passed"], "c": ["failed"], "e": ["passed"]}))  # fmt: skip
    verdicts = [(c.task, c.verdict) for c in compare(old, new)]
    assert verdicts == [("c", "worse"), ("b", "better"), ("d", "gone"), ("e", "new"), ("a", "same")]
