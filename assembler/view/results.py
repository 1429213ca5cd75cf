"""Eval results files for the view: runs, the summary per task, two files compared.

Read defensively: a results file may come from another version (issue 23 adds cost
fields), so every field is optional and a line that is not a run is counted and
skipped. The later line of a run wins, as `assemble eval` reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.errors import UsageError
from assembler.eval.summary import percentile
from assembler.view.session_file import number, usage_cost

MAX_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class Run:
    """One task run, as the view shows it; `raw` keeps the whole record."""

    task: str
    repeat: int
    status: str
    turns: int
    tokens: int
    cost: float | None
    duration: float
    raw: Mapping[str, Any]

    @property
    def checks(self) -> list[Mapping[str, Any]]:
        checks = self.raw.get("checks")
        return [c for c in checks if isinstance(c, Mapping)] if isinstance(checks, list) else []


@dataclass(frozen=True)
class TaskSummary:
    task: str
    runs: int
    passed: int
    errors: int
    p50: float
    p95: float
    tokens: float
    cost: float | None

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class Results:
    path: Path
    runs: list[Run]
    unreadable: int = 0
    evals: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    tasks: list[TaskSummary] = field(default_factory=list)
    overall: TaskSummary | None = None


def looks_like_results(path: Path) -> bool:
    """A results file starts with a run record (`task` and `status`), not a session
    header."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
        record = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and "task" in record and "status" in record


def _run(record: Mapping[str, Any]) -> Run | None:
    task, status = record.get("task"), record.get("status")
    if not isinstance(task, str) or not isinstance(status, str):
        return None
    repeat = record.get("repeat")
    usage = record.get("usage") if isinstance(record.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    cost = record.get("cost_usd")
    cost_value = (
        float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    )
    return Run(
        task=task,
        repeat=repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else 1,
        status=status,
        turns=int(number(record.get("turns"))),
        tokens=int(number(usage.get("input_tokens")) + number(usage.get("output_tokens"))),
        cost=cost_value if cost_value is not None else usage_cost(usage),
        duration=float(number(record.get("duration_s"))),
        raw=record,
    )


def read(path: Path) -> Results:
    """The latest record of each run in `path`, and the summary."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UsageError(f"{path} is over {MAX_BYTES // (1 << 20)} MiB; not read")
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    latest: dict[tuple[str, int], Run] = {}
    unreadable = 0
    evals: dict[str, None] = {}
    models: dict[str, None] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            unreadable += 1
            continue
        run = _run(record) if isinstance(record, dict) else None
        if run is None:
            unreadable += 1
            continue
        latest[(run.task, run.repeat)] = run
        evals[str(record.get("eval", ""))] = None
        models[str(record.get("model", ""))] = None
    runs = list(latest.values())
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.task, []).append(run)
    for group in groups.values():
        group.sort(key=lambda r: r.repeat)
    return Results(
        path=path,
        runs=[run for group in groups.values() for run in group],
        unreadable=unreadable,
        evals=tuple(e for e in evals if e),
        models=tuple(m for m in models if m),
        tasks=[summarise(task, group) for task, group in groups.items()],
        overall=summarise("overall", runs),
    )


def summarise(task: str, runs: list[Run]) -> TaskSummary:
    durations = [run.duration for run in runs]
    costs = [run.cost for run in runs if run.cost is not None]
    count = len(runs)
    return TaskSummary(
        task=task,
        runs=count,
        passed=sum(1 for run in runs if run.status == "passed"),
        errors=sum(1 for run in runs if run.status == "error"),
        p50=percentile(durations, 0.5),
        p95=percentile(durations, 0.95),
        tokens=sum(run.tokens for run in runs) / count if count else 0.0,
        cost=sum(costs) if costs else None,
    )


@dataclass(frozen=True)
class Change:
    """One task in two results files: its summary before and after, and the verdict."""

    task: str
    before: TaskSummary | None
    after: TaskSummary | None

    @property
    def verdict(self) -> str:
        """`worse` (passes less often), `better`, `same`, `new` or `gone`."""
        if self.before is None:
            return "new"
        if self.after is None:
            return "gone"
        if self.after.rate < self.before.rate:
            return "worse"
        if self.after.rate > self.before.rate:
            return "better"
        return "same"


def compare(old: Results, new: Results) -> list[Change]:
    """Every task of either file; worse first, then better, then the rest."""
    before = {t.task: t for t in old.tasks}
    after = {t.task: t for t in new.tasks}
    tasks = list(before) + [t for t in after if t not in before]
    changes = [Change(task, before.get(task), after.get(task)) for task in tasks]
    rank = {"worse": 0, "better": 1, "gone": 2, "new": 3, "same": 4}
    return sorted(changes, key=lambda c: rank[c.verdict])
