"""The summary table: pass rate per task and overall, turns, tokens, cost, wall time.

Figures are per task over its recorded runs (repeats included): runs passed out of
runs, the mean turns and tokens (input + output) of a run, and the median (p50) and
95th percentile (p95, nearest rank) of a run's wall time; when the model has a price,
the cost of all the task's runs. The overall row counts every run. Runs never started
because the evaluation's budget was spent count as runs that did not pass (`unrun`).
The same numbers feed `--compare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assembler.eval.records import RunRecord
from assembler.pricing import format_cost


@dataclass(frozen=True)
class TaskStats:
    task: str
    runs: int
    passed: int
    errors: int
    turns: float
    tokens: float
    p50: float
    p95: float
    cost: float | None = None
    """US dollars of every run (None: no run had a known price)."""
    unrun: int = 0
    """Runs the evaluation's budget left unstarted (status `budget`)."""

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p50 of 1, 2, 3, 4 is 2): always a measured value."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def stats(task: str, records: Sequence[RunRecord]) -> TaskStats:
    durations = [r.duration_s for r in records]
    count = len(records)
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    return TaskStats(
        task=task,
        runs=count,
        passed=sum(1 for r in records if r.status == "passed"),
        errors=sum(1 for r in records if r.status == "error"),
        turns=sum(r.turns for r in records) / count if count else 0.0,
        tokens=sum(r.tokens for r in records) / count if count else 0.0,
        p50=percentile(durations, 0.5),
        p95=percentile(durations, 0.95),
        cost=sum(costs) if costs else None,
        unrun=sum(1 for r in records if r.status == "budget"),
    )


def by_task(records: Iterable[RunRecord]) -> dict[str, list[RunRecord]]:
    """Records grouped by task, tasks in first-seen order, repeats in order."""
    groups: dict[str, list[RunRecord]] = {}
    for record in records:
        groups.setdefault(record.task, []).append(record)
    for group in groups.values():
        group.sort(key=lambda r: r.repeat)
    return groups


def summary_rows(records: Sequence[RunRecord]) -> tuple[list[TaskStats], TaskStats]:
    groups = by_task(records)
    return [stats(task, group) for task, group in groups.items()], stats("overall", records)


_HEADERS = ("task", "passed", "rate", "turns", "tokens", "p50", "p95")


def format_summary(records: Sequence[RunRecord], *, wall: float | None = None) -> str:
    """The table, a total line, and one line per run that did not pass."""
    if not records:
        return "no runs recorded"
    rows, overall = summary_rows(records)
    priced = overall.cost is not None
    headers = (*_HEADERS[:5], "cost", *_HEADERS[5:]) if priced else _HEADERS
    table = [headers, *(_row(s, priced) for s in rows), _row(overall, priced)]
    lines = format_table(table, numeric=True)
    total_in = sum(int(r.usage.get("input_tokens", 0)) for r in records)
    total_out = sum(int(r.usage.get("output_tokens", 0)) for r in records)
    total = (
        f"{len(records)} runs; {total_in + total_out:,} tokens ({total_in:,} in, {total_out:,} out)"
    )
    if overall.cost is not None:
        total += f"; cost {format_cost(overall.cost)}"
    if overall.unrun:
        total += f"; {overall.unrun} not run (the evaluation's budget was spent)"
    if wall is not None:
        total += f"; wall time {_seconds(wall)}"
    lines.append(total)
    failing = [r for r in records if r.status != "passed"]
    for record in failing[:20]:
        label = {"error": "ERROR", "budget": "BUDGET"}.get(record.status, "FAIL")
        lines.append(f"{label} {record.task}#{record.repeat}: {_one_line(record.first_failure())}")
    if len(failing) > 20:
        lines.append(f"... and {len(failing) - 20} more runs that did not pass")
    return "\n".join(lines)


def _row(s: TaskStats, priced: bool = False) -> tuple[str, ...]:
    notes = [f"{s.errors} error{'s' if s.errors != 1 else ''}"] if s.errors else []
    if s.unrun:
        notes.append(f"{s.unrun} unrun")
    shown = f" ({', '.join(notes)})" if notes else ""
    cells = [s.task, f"{s.passed}/{s.runs}{shown}", f"{s.rate:.0%}", f"{s.turns:.1f}"]
    cells.append(f"{s.tokens:,.0f}")
    if priced:
        cells.append(format_cost(s.cost) if s.cost is not None else "-")
    return (*cells, _seconds(s.p50), _seconds(s.p95))


def format_table(rows: Sequence[tuple[str, ...]], *, numeric: bool = False) -> list[str]:
    """Columns padded to width, a rule above the last row (the overall one); with
    `numeric`, every column but the first is aligned right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    rule = tuple("-" * w for w in widths)
    lines = []
    for row in [*rows[:-1], rule, rows[-1]]:
        cells = [row[0].ljust(widths[0])]
        for cell, width in zip(row[1:], widths[1:], strict=True):
            cells.append(cell.rjust(width) if numeric else cell.ljust(width))
        lines.append("  ".join(cells).rstrip())
    return lines


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 160 else flat[:159] + "…"
