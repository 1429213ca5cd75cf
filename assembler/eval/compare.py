"""`assemble eval --compare old.jsonl new.jsonl`: what changed, task by task.

For each task: the pass rate before and after (runs passed out of runs, repeats
included), the mean tokens of a run and the median wall time, with the relative
change. A task whose pass rate fell is a regression, and any regression makes the
comparison exit 1, so it can gate a change in CI the way the evaluation itself does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assembler.errors import UsageError
from assembler.eval.records import RunRecord, read_results
from assembler.eval.summary import TaskStats, by_task, format_table, stats


@dataclass(frozen=True)
class Comparison:
    text: str
    regressions: tuple[str, ...]


def compare_files(old: Path, new: Path) -> Comparison:
    before, after = _records(old), _records(new)
    old_groups, new_groups = by_task(before), by_task(after)
    names = list(dict.fromkeys([*old_groups, *new_groups]))
    rows: list[tuple[str, ...]] = [("task", "pass rate", "tokens / run", "p50 time")]
    regressions = []
    for name in names:
        a = stats(name, old_groups[name]) if name in old_groups else None
        b = stats(name, new_groups[name]) if name in new_groups else None
        if a is not None and b is not None and b.rate < a.rate:
            regressions.append(name)
        rows.append(_row(name, a, b))
    rows.append(_row("overall", stats("overall", before), stats("overall", after)))
    lines = format_table(rows)
    if regressions:
        lines.append(
            f"{len(regressions)} task(s) pass less often than before: {', '.join(regressions)}"
        )
    else:
        lines.append("no task passes less often than before")
    return Comparison("\n".join(lines), tuple(regressions))


def _records(path: Path) -> list[RunRecord]:
    if not path.is_file():
        raise UsageError(f"{path}: no such results file")
    recorded = read_results(path)
    if not recorded.records:
        raise UsageError(f"{path} holds no readable results")
    return list(recorded.records.values())


def _row(name: str, a: TaskStats | None, b: TaskStats | None) -> tuple[str, ...]:
    if a is None and b is not None:
        return (name, f"(new) {_rate(b)}", f"(new) {b.tokens:,.0f}", f"(new) {_time(b.p50)}")
    if b is None and a is not None:
        return (name, f"{_rate(a)} (removed)", f"{a.tokens:,.0f}", _time(a.p50))
    assert a is not None and b is not None
    mark = " ▼" if b.rate < a.rate else (" ▲" if b.rate > a.rate else "")
    return (
        name,
        f"{_rate(a)} → {_rate(b)}{mark}",
        f"{a.tokens:,.0f} → {b.tokens:,.0f}{_change(a.tokens, b.tokens)}",
        f"{_time(a.p50)} → {_time(b.p50)}{_change(a.p50, b.p50)}",
    )


def _rate(s: TaskStats) -> str:
    return f"{s.passed}/{s.runs} ({s.rate:.0%})"


def _change(before: float, after: float) -> str:
    if before == after:
        return ""
    if before == 0:
        return " (new cost)"
    return f" ({(after - before) / before:+.0%})"


def _time(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"
