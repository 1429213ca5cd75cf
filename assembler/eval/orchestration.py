"""An evaluation from start to end, for the CLI and for embedding programs alike.

`prepare_evaluation` does everything that can fail before a task runs, in the order a
user should hear about it: the options (`--scheduler` and its extra), the eval file
and its agent tree (validated whole), each model the runs would use (a configuration
mistake is reported once, not once per task), trust, the plan (repeats, `--only`,
what the results file already holds). The agent's team is loaded here, once per
evaluation, and every task in this process builds from it. `run_evaluation` then
runs what is left and returns the records; `evaluate_file` is both in one call:

    from assembler.eval.orchestration import EvalOptions, evaluate_file
    result = asyncio.run(evaluate_file(Path("evals/smoke.eval.yaml"), EvalOptions(trust=True)))
    print(result.passed, [r.status for r in result.records])

`assemble eval` is these functions with a progress display and a summary around them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assembler.agent.team import TeamMember, load_team
from assembler.agent.trusting import decide_trust
from assembler.budgets import BudgetLimits
from assembler.errors import Issue
from assembler.eval.evaluation import (
    ProgressSink,
    Tally,
    check_code,
    default_out,
    evaluate,
    session_directory,
)
from assembler.eval.load import load_eval
from assembler.eval.plan import (
    Selection,
    check_models,
    check_resumable,
    parse_scheduler,
    pending,
    plan_runs,
    with_default_model,
    with_recorded_repeats,
)
from assembler.eval.records import ResultsWriter, RunRecord, read_results
from assembler.eval.spec import EvalSpec, RunRequest
from assembler.extras import require
from assembler.manifest.model import Manifest
from assembler.trust import TrustDecision, TrustPrompt


@dataclass(frozen=True)
class EvalOptions:
    """What `assemble eval`'s options say, with their defaults. `trust=True` trusts
    the agent's and the eval file's code for this evaluation; None asks the trust
    store, then `ask_trust` (when given)."""

    model: str | None = None
    repeat: int = 1
    concurrency: int | None = None
    only: tuple[str, ...] = ()
    out: Path | None = None
    rerun_failed: bool = False
    scheduler: str | None = None
    trust: bool | None = None
    ask_trust: TrustPrompt | None = None
    budget: BudgetLimits | None = None
    """Each run's budget, over the eval file's (`--budget-usd/--budget-tokens`)."""
    total_budget: BudgetLimits | None = None
    """The whole evaluation's, over the eval file's `budget` (`--total-budget-*`)."""


@dataclass(frozen=True)
class PreparedEvaluation:
    """An evaluation checked and planned, nothing run yet."""

    spec: EvalSpec
    manifest: Manifest
    team: TeamMember
    """The agent's tree, loaded once: every task in this process builds from it."""
    trust: TrustDecision
    """Trust as decided for that tree: every task is built on it."""
    options: EvalOptions
    out: Path
    runs: tuple[RunRequest, ...]
    """Every run the evaluation has (the summary covers them all)."""
    todo: tuple[RunRequest, ...]
    """The runs still to do (the others are in the results file)."""
    unreadable: int = 0
    """Lines of the results file that could not be read (skipped)."""
    warnings: tuple[Issue, ...] = ()
    budget: BudgetLimits | None = None
    """What the whole evaluation may spend (the file's `budget`, the options' over it)."""

    def start_note(self) -> str:
        """What is about to happen: `3 run(s); results in FILE`, or what is resumed."""
        planned, todo = len(self.runs), len(self.todo)
        note = f"{todo} run(s); results in {self.out}"
        if planned - todo:
            note = (
                f"resuming: {planned - todo} of {planned} run(s) already in {self.out}; "
                f"{todo} to do"
            )
        if self.unreadable:
            note += f" ({self.unreadable} unreadable line(s) skipped)"
        return note


@dataclass(frozen=True)
class EvaluationResult:
    """What an evaluation (or the part of it before an interruption) recorded."""

    out: Path
    planned: int
    records: tuple[RunRecord, ...]
    """The latest record of each planned run the results file holds, in plan order."""
    finished: int
    """Runs this invocation finished and recorded."""
    todo: int
    wall: float
    interrupted: bool = False

    @property
    def passed(self) -> bool:
        """Every planned run is recorded, and passed."""
        return len(self.records) == self.planned and all(
            record.status == "passed" for record in self.records
        )


def prepare_evaluation(
    file: Path, options: EvalOptions, *, warn: Callable[[Issue], None] | None = None
) -> PreparedEvaluation:
    """Check and plan the evaluation of `file`; every usage problem is raised here, as
    a `UsageError` (the eval file's or agent's issues together in one `ManifestError`),
    before anything runs or is written. `warn` hears each warning of the eval file and
    its agent tree as soon as they are read (before a trust question)."""
    if options.scheduler is not None:  # a misspelt option or a missing extra fails first
        parse_scheduler(options.scheduler)
        require("dask", f"--scheduler {options.scheduler}")
    report = load_eval(file)
    spec, manifest = report.spec, report.manifest
    assert spec is not None and manifest is not None  # `load_eval` raised otherwise
    if warn is not None:
        for issue in report.issues:
            warn(issue)
    out = options.out or default_out(spec)
    runs = plan_runs(
        spec,
        Selection(options.repeat, options.only, options.model, options.budget),
        session_directory(out),
    )
    runs = with_default_model(runs, manifest)
    total = BudgetLimits.from_mapping(spec.budget).overridden(options.total_budget)
    check_models(runs, manifest, total)
    team = load_team(manifest)
    # one decision for the whole agent tree and the eval file's own choices (its check
    # commands, its tasks' replays), before any task starts; every task builds on it
    trust = decide_trust(
        team, options.trust, options.ask_trust, extra=check_code(spec, runs, manifest)
    )
    recorded = read_results(out)
    if options.rerun_failed:
        runs = with_recorded_repeats(runs, recorded.records)
    check_resumable(runs, recorded.records, manifest, out)
    todo = pending(runs, recorded.records, rerun_failed=options.rerun_failed)
    return PreparedEvaluation(
        spec=spec,
        manifest=manifest,
        team=team,
        trust=trust,
        options=options,
        out=out,
        runs=tuple(runs),
        todo=tuple(todo),
        unreadable=recorded.unreadable,
        warnings=report.issues,
        budget=total or None,
    )


@dataclass
class _Silent:
    """No progress display (an embedding program reads the result)."""

    seen: list[RunRecord] = field(default_factory=list)

    def update(self, record: RunRecord) -> None:
        self.seen.append(record)

    def end(self) -> None:
        return None


async def run_evaluation(
    prepared: PreparedEvaluation,
    *,
    progress: ProgressSink | None = None,
    tally: Tally | None = None,
) -> EvaluationResult:
    """Run what `prepared` left to do (each record written to the results file as it
    ends) and read back the records of every planned run. Cancelled (Ctrl-C), it stops
    the runs in flight (each closing its agent and removing its copy) and propagates;
    what finished stays recorded (counted in `tally`, when given), and preparing again
    resumes from there."""
    writer = ResultsWriter(prepared.out)
    tally = tally if tally is not None else Tally()
    clock = time.monotonic()
    try:
        if prepared.todo:
            await evaluate(
                prepared.todo,
                prepared.manifest,
                scheduler=prepared.options.scheduler,
                concurrency=prepared.options.concurrency,
                writer=writer,
                progress=progress if progress is not None else _Silent(),
                tally=tally,
                team=prepared.team,
                trust=prepared.trust,
                budget=prepared.budget,
            )
    finally:
        writer.close()
    return read_result(prepared, finished=tally.finished, wall=time.monotonic() - clock)


def read_result(
    prepared: PreparedEvaluation, *, finished: int, wall: float, interrupted: bool = False
) -> EvaluationResult:
    """The records of `prepared`'s runs as its results file holds them now."""
    latest = read_results(prepared.out).records
    records = tuple(latest[run.key] for run in prepared.runs if run.key in latest)
    return EvaluationResult(
        out=prepared.out,
        planned=len(prepared.runs),
        records=records,
        finished=finished,
        todo=len(prepared.todo),
        wall=wall,
        interrupted=interrupted,
    )


async def evaluate_file(
    file: Path, options: EvalOptions | None = None, *, progress: ProgressSink | None = None
) -> EvaluationResult:
    """`prepare_evaluation` then `run_evaluation`: an evaluation without the CLI."""
    return await run_evaluation(
        prepare_evaluation(file, options or EvalOptions()), progress=progress
    )
