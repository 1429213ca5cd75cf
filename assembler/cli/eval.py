"""`assemble eval`: run an agent over the tasks of an eval file and report pass rates."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click

from assembler.cli.common import ask_trust
from assembler.cli.main import report_error
from assembler.errors import UsageError
from assembler.text import terminal_safe


@dataclass(frozen=True)
class _Options:
    model: str | None
    repeat: int
    concurrency: int | None
    only: tuple[str, ...]
    out: Path | None
    rerun_failed: bool
    scheduler: str | None
    trust: bool


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
) -> None:
    """Run FILE's tasks (a *.eval.yaml), each in a fresh copy of the workspace with a
    fresh agent, check the outcomes, and print pass rates.

    Exit 0 when every run passed, 1 otherwise, 2 on usage errors, 130 when
    interrupted (run it again with the same --out to resume).
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
        options = _Options(model, repeat, concurrency, only, out, rerun_failed, scheduler, trust)
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


def _evaluate(file: Path, options: _Options) -> int:
    from assembler.eval.evaluation import (
        Tally,
        check_code,
        default_out,
        evaluate,
        session_directory,
    )
    from assembler.eval.load import load_eval
    from assembler.eval.plan import (
        Selection,
        check_resumable,
        parse_scheduler,
        pending,
        plan_runs,
    )
    from assembler.eval.progress import Progress
    from assembler.eval.records import ResultsWriter, read_results
    from assembler.eval.summary import format_summary
    from assembler.trust import check_trust

    if options.scheduler is not None:
        parse_scheduler(options.scheduler)  # a misspelt option fails before anything runs
    report = load_eval(file)
    for issue in report.issues:
        click.echo(terminal_safe(issue.format()), err=True)
    spec, manifest = report.spec, report.manifest
    assert spec is not None and manifest is not None
    check_trust(manifest, True if options.trust else None, ask_trust, extra=check_code(spec))
    out = options.out or default_out(spec)
    selection = Selection(options.repeat, options.only, options.model)
    runs = plan_runs(spec, selection, session_directory(out))
    recorded = read_results(out)
    check_resumable(runs, recorded.records, manifest, out)
    todo = pending(runs, recorded.records, rerun_failed=options.rerun_failed)

    progress = Progress(sys.stdout)
    writer = ResultsWriter(out)
    tally = Tally()
    clock = time.monotonic()
    interrupted = False
    note = _start_note(len(runs), len(todo), recorded.unreadable, out)
    try:
        if todo:
            progress.begin(len(todo), note)
            asyncio.run(
                evaluate(
                    todo,
                    manifest,
                    scheduler=options.scheduler,
                    concurrency=options.concurrency,
                    writer=writer,
                    progress=progress,
                    tally=tally,
                )
            )
        else:
            progress.note(note)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.end()
        writer.close()

    latest = read_results(out).records
    records = [latest[run.key] for run in runs if run.key in latest]
    click.echo(terminal_safe(format_summary(records, wall=time.monotonic() - clock)))
    click.echo(terminal_safe(f"results: {out}"))
    if interrupted:
        click.echo(
            terminal_safe(
                f"interrupted: {tally.finished} of {len(todo)} run(s) finished and recorded; "
                f"run the same command with --out {out} to resume"
            ),
            err=True,
        )
        return 130
    passed = len(records) == len(runs) and all(r.status == "passed" for r in records)
    return 0 if passed else 1


def _start_note(planned: int, todo: int, unreadable: int, out: Path) -> str:
    done = planned - todo
    note = f"{todo} run(s); results in {out}"
    if done:
        note = f"resuming: {done} of {planned} run(s) already in {out}; {todo} to do"
    if unreadable:
        note += f" ({unreadable} unreadable line(s) skipped)"
    return note
