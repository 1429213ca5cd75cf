"""`assemble eval`: run an agent over the tasks of an eval file and report pass rates."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assembler.cli.common import EXIT_BUDGET, ask_trust, budget_limits, budget_options
from assembler.cli.report import report_error
from assembler.errors import UsageError
from assembler.text import terminal_safe

if TYPE_CHECKING:
    from assembler.eval.orchestration import EvalOptions


@click.command(
    "eval",
    epilog="\b\nExample:\n  assemble eval evals/shipping.eval.yaml --trust --out before.jsonl\n"
    "  assemble eval evals/shipping.eval.yaml --trust --repeat 3 --out after.jsonl\n"
    "  assemble eval --compare before.jsonl after.jsonl",
)
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--model", help="Use this model for every task: provider:name.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, help="Runs per task.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Task runs at once (default 4 in process; the cluster's worker threads with --scheduler).",
)
@click.option(
    "--only", multiple=True, metavar="GLOB", help="Only the tasks whose id matches (repeatable)."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Results file (JSON lines); an existing one is resumed. Default:"
    " eval-results/NAME-TIME.jsonl.",
)
@click.option("--rerun-failed", is_flag=True, help="With --out: run recorded failures again.")
@click.option(
    "--scheduler",
    metavar="tcp://HOST:PORT | local:N",
    help="Run on a Dask cluster, or on N local worker processes (extra: dask).",
)
@click.option("--trust", is_flag=True, help="Trust the agent's and the eval file's code.")
@click.option(
    "--compare",
    nargs=2,
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="OLD NEW",
    help="Compare two results files task by task instead of running.",
)
@budget_options
@click.option(
    "--total-budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop starting runs once the whole evaluation spent this many US dollars.",
)
@click.option(
    "--total-budget-tokens",
    type=click.IntRange(min=1),
    help="Stop starting runs once the whole evaluation used this many tokens.",
)
def eval_command(
    file: Path | None,
    model: str | None,
    repeat: int,
    concurrency: int | None,
    only: tuple[str, ...],
    out: Path | None,
    rerun_failed: bool,
    scheduler: str | None,
    trust: bool,
    compare: tuple[Path, Path] | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    total_budget_usd: float | None,
    total_budget_tokens: int | None,
) -> None:
    """Run FILE's tasks (a *.eval.yaml), each in a fresh copy of the workspace with a
    fresh agent, check the outcomes, and print pass rates.

    Exit 0 when every run passed, 1 otherwise, 2 on usage errors, 3 when the
    evaluation's budget left runs unstarted (status `budget`), 130 when interrupted
    (run it again with the same --out to resume; so are runs left by a budget).
    --budget-usd/--budget-tokens bound each run; --total-budget-usd/-tokens the whole.
    """
    try:
        if compare:
            if file is not None:
                raise click.UsageError("--compare takes two results files, not an eval file")
            sys.exit(_compare(*compare))
        if file is None:
            raise click.UsageError("missing an eval file (FILE), or --compare OLD NEW")
        if rerun_failed and out is None:
            raise click.UsageError("--rerun-failed needs the --out of the earlier run")
        # imported here: `--compare` needs none of the machinery that runs agents
        from assembler.eval.orchestration import EvalOptions

        options = EvalOptions(
            model=model,
            repeat=repeat,
            concurrency=concurrency,
            only=only,
            out=out,
            rerun_failed=rerun_failed,
            scheduler=scheduler,
            trust=True if trust else None,
            ask_trust=ask_trust,
            budget=budget_limits(budget_usd, budget_tokens),
            total_budget=budget_limits(total_budget_usd, total_budget_tokens),
        )
        code = _evaluate(file, options)
    except UsageError as e:
        report_error(e)
        sys.exit(2)
    sys.exit(code)


def _compare(old: Path, new: Path) -> int:
    from assembler.eval.compare import compare_files

    comparison = compare_files(old, new)
    click.echo(terminal_safe(comparison.text))
    return 1 if comparison.regressions else 0


def _evaluate(file: Path, options: EvalOptions) -> int:
    """`assembler.eval.orchestration` with a progress display and a summary around it."""
    from assembler.eval.evaluation import Tally
    from assembler.eval.orchestration import prepare_evaluation, read_result, run_evaluation
    from assembler.eval.progress import Progress
    from assembler.eval.summary import format_summary

    prepared = prepare_evaluation(
        file, options, warn=lambda issue: click.echo(terminal_safe(issue.format()), err=True)
    )
    progress = Progress(sys.stdout)
    tally = Tally()
    clock = time.monotonic()
    interrupted = False
    try:
        if prepared.todo:
            progress.begin(len(prepared.todo), prepared.start_note())
            asyncio.run(run_evaluation(prepared, progress=progress, tally=tally))
        else:
            progress.note(prepared.start_note())
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.end()

    result = read_result(
        prepared, finished=tally.finished, wall=time.monotonic() - clock, interrupted=interrupted
    )
    click.echo(terminal_safe(format_summary(result.records, wall=result.wall)))
    click.echo(terminal_safe(f"results: {result.out}"))
    if interrupted:
        click.echo(
            terminal_safe(
                f"interrupted: {result.finished} of {result.todo} run(s) finished and "
                f"recorded; run the same command with --out {result.out} to resume"
            ),
            err=True,
        )
        return 130
    if any(record.status == "budget" for record in result.records):
        return EXIT_BUDGET
    return 0 if result.passed else 1
