"""Which task runs an invocation asks for, and which of them a results file already holds.

A run is a (task id, repeat) pair. `--only` selects tasks by glob, `--repeat N` makes
repeats 1..N, and the model of each run is resolved here once: `--model`, else the
task's, else the file's default, else the manifest's. Resuming skips pairs already
recorded (`--rerun-failed`: unless they did not pass); a results file written with
another model for the same task is refused rather than mixed into one pass rate.
`parse_scheduler` reads `--scheduler`, so a misspelt one fails before anything runs.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assembler.agent.model_choice import check_model, default_label
from assembler.budgets import BudgetLimits
from assembler.errors import UsageError
from assembler.eval.execute import model_label
from assembler.eval.records import RunRecord
from assembler.eval.spec import EvalSpec, RunRequest, TaskSpec
from assembler.manifest.model import Manifest


@dataclass(frozen=True)
class Selection:
    """What to run: the eval, repeats, a task filter, and the `--model` override."""

    repeat: int = 1
    only: tuple[str, ...] = ()
    model: str | None = None
    budget: BudgetLimits | None = None
    """`--budget-usd/--budget-tokens`: each run's budget, over the file's."""


def plan_runs(spec: EvalSpec, selection: Selection, session_dir: Path) -> list[RunRequest]:
    """Every run the selection asks for, task by task, repeats together."""
    tasks = select_tasks(spec.tasks, selection.only)
    defaults = spec.defaults
    return [
        RunRequest(
            eval_name=spec.name,
            task=task,
            repeat=repeat,
            manifest=spec.agent,
            session_dir=session_dir,
            workspace=spec.workspace,
            model=selection.model or task.model or defaults.model,
            max_turns=task.max_turns or defaults.max_turns,
            timeout=task.timeout or defaults.timeout,
            check_timeout=defaults.check_timeout,
            budget=run_budget(defaults.budget, task.budget, selection.budget),
        )
        for task in tasks
        for repeat in range(1, selection.repeat + 1)
    ]


def run_budget(
    defaults: Mapping[str, Any] | None,
    task: Mapping[str, Any] | None,
    given: BudgetLimits | None,
) -> dict[str, Any] | None:
    """One run's budget: the file's defaults, the task's own over them, the command
    line's over both, limit by limit (None: the agent's `limits.budget` alone)."""
    limits = BudgetLimits.from_mapping(defaults).overridden(BudgetLimits.from_mapping(task))
    limits = limits.overridden(given)
    return limits.to_dict() if limits else None


def select_tasks(tasks: Sequence[TaskSpec], only: Sequence[str]) -> list[TaskSpec]:
    """The tasks whose id matches one of the `only` globs (all without any); a glob
    that matches nothing is a usage error, since it is most likely a typo."""
    if not only:
        return list(tasks)
    for pattern in only:
        if not any(fnmatch.fnmatchcase(task.id, pattern) for task in tasks):
            sample = ", ".join(task.id for task in tasks[:8])
            more = ", ..." if len(tasks) > 8 else ""
            raise UsageError(f"--only {pattern!r} matches no task (tasks: {sample}{more})")
    return [t for t in tasks if any(fnmatch.fnmatchcase(t.id, p) for p in only)]


def with_recorded_repeats(
    runs: Sequence[RunRequest], recorded: Mapping[tuple[str, int], RunRecord]
) -> list[RunRequest]:
    """`runs`, plus every repeat the results file holds of the same tasks beyond them:
    `--rerun-failed` without `--repeat 3` reruns a failed repeat #3 too, and the
    summary counts every repeat the file has."""
    first = {run.task.id: run for run in reversed(runs)}
    planned = {run.key for run in runs}
    extra = {
        key: replace(first[key[0]], repeat=key[1])
        for key in recorded
        if key not in planned and key[0] in first
    }
    order: dict[str, int] = {}
    for run in runs:
        order.setdefault(run.task.id, len(order))
    return sorted([*runs, *extra.values()], key=lambda run: (order[run.task.id], run.repeat))


def pending(
    runs: Sequence[RunRequest],
    recorded: Mapping[tuple[str, int], RunRecord],
    *,
    rerun_failed: bool = False,
) -> list[RunRequest]:
    """The runs still to do: not recorded yet, or recorded as never started (status
    `budget`); with `rerun_failed`, also those recorded without passing."""
    todo = []
    for run in runs:
        record = recorded.get(run.key)
        unrun = record is None or record.status == "budget"
        if unrun or (rerun_failed and record is not None and record.status != "passed"):
            todo.append(run)
    return todo


def check_resumable(
    runs: Iterable[RunRequest],
    recorded: Mapping[tuple[str, int], RunRecord],
    manifest: Manifest,
    out: Path,
) -> None:
    """Refuse to add runs to a results file that holds another evaluation's, or the
    same task run with another model."""
    for run in runs:
        record = recorded.get(run.key)
        if record is None:
            continue
        if record.eval and record.eval != run.eval_name:
            raise UsageError(
                f"{out} holds results of the evaluation `{record.eval}`, not `{run.eval_name}`; "
                "pass another --out"
            )
        expected = model_label(run, manifest)
        if record.model and record.model != expected:
            raise UsageError(
                f"{out} holds {run.label} run with the model {record.model}, and this run "
                f"would use {expected}; pass another --out to compare them "
                "(then `assemble eval --compare`)"
            )


def with_default_model(runs: Sequence[RunRequest], manifest: Manifest) -> list[RunRequest]:
    """A manifest without `model:` runs on the user's default model (`ASSEMBLER_MODEL`,
    the config file): chosen here, where the evaluation starts, so Dask workers use the
    same one and the records name it."""
    label = default_label(manifest) if manifest.model is None else ""
    return [replace(run, model=label) if label and not run.model else run for run in runs]


def check_models(
    runs: Iterable[RunRequest], manifest: Manifest, total: BudgetLimits | None = None
) -> None:
    """Each model the runs use can work (`provider:name`, a known provider, sensible
    options), checked once before any task: a mistake there would fail every task the
    same way, so it is a usage error instead of one error record per run. So is a
    budget in dollars (a run's, the agent's or the whole evaluation's) on a model
    without a known price."""
    runs = list(runs)
    dollars = manifest.limits.budget.cost_usd is not None or bool(total and total.cost_usd)
    for model in dict.fromkeys(run.model for run in runs):
        choice = check_model(manifest, model)
        counted = dollars or any(
            run.model == model and (run.budget or {}).get("cost_usd") for run in runs
        )
        if counted and choice.price is None:
            raise UsageError(
                f"a `cost_usd` budget needs the price of {choice.label}, which is not in the "
                "price table: set the agent's `model.price`, or budget tokens instead"
            )


def parse_scheduler(text: str) -> str | int:
    """`local:N` gives N (worker processes); an address is returned as it is."""
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--scheduler {text}: `local:N` needs a number of workers, N >= 1")
        return int(count)
    if "://" not in text:
        raise UsageError(
            f"--scheduler {text}: expected a scheduler address such as tcp://HOST:8786, "
            "or local:N for N worker processes on this machine"
        )
    return text
