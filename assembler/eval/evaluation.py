"""Running the planned task runs: N at a time on one event loop, results as they come.

An executor runs one `RunRequest` and returns its `RunRecord`: `LocalExecutor` in this
process (model-bound work needs no processes: while one run waits for its model or a
command, the others go on), `cluster.DaskExecutor` on Dask workers. `drive` keeps
`concurrency` runs in flight, writes each record to the results file the moment it
arrives and tells the progress display. On cancellation (Ctrl-C) the runs in flight
are cancelled, each removing its workspace copy and closing its agent; what was
recorded stays, and the next invocation with the same `--out` resumes from there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from assembler.agent.team import TeamMember, load_team
from assembler.errors import UsageError
from assembler.eval.execute import run_task
from assembler.eval.records import ResultsWriter, RunRecord
from assembler.eval.replay_spec import child_scripts
from assembler.eval.spec import EvalSpec, RunRequest
from assembler.manifest.model import Manifest
from assembler.trust import ProjectCode, TrustDecision, replay_code

DEFAULT_CONCURRENCY = 4
RESULTS_DIRECTORY = "eval-results"


class ProgressSink(Protocol):
    """Who hears of each run as it is recorded (`eval.progress.Progress` draws it)."""

    def update(self, record: RunRecord) -> None: ...

    def end(self) -> None: ...


class Executor(Protocol):
    async def run(self, request: RunRequest) -> RunRecord: ...

    async def aclose(self) -> None: ...


class LocalExecutor:
    """Runs in this process, on this event loop, with the manifest and its team of
    sub-agents loaded once per evaluation."""

    def __init__(
        self,
        manifest: Manifest,
        team: TeamMember | None = None,
        trust: TrustDecision | None = None,
    ) -> None:
        self.manifest = manifest
        self.team = team if team is not None else load_team(manifest)
        self.trust = trust

    async def run(self, request: RunRequest) -> RunRecord:
        return await run_task(request, manifest=self.manifest, team=self.team, trust=self.trust)

    async def aclose(self) -> None:
        return None


@dataclass
class Tally:
    """How many runs this invocation finished (for the message after Ctrl-C)."""

    finished: int = 0


async def drive(
    runs: Sequence[RunRequest],
    executor: Executor,
    *,
    concurrency: int,
    writer: ResultsWriter,
    progress: ProgressSink,
    tally: Tally | None = None,
) -> None:
    """Run every request, `concurrency` at a time, recording each as it finishes."""
    tally = tally or Tally()
    queue: Iterator[RunRequest] = iter(runs)

    async def lane() -> None:
        for request in queue:  # one shared iterator: each run is taken by one lane
            record = await executor.run(request)
            writer.write(record)
            tally.finished += 1
            progress.update(record)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(concurrency, len(runs)))):
                group.create_task(lane())
    finally:
        progress.end()


async def evaluate(
    runs: Sequence[RunRequest],
    manifest: Manifest,
    *,
    scheduler: str | None,
    concurrency: int | None,
    writer: ResultsWriter,
    progress: ProgressSink,
    tally: Tally | None = None,
    team: TeamMember | None = None,
    trust: TrustDecision | None = None,
) -> None:
    """Run `runs` in process, or on the Dask cluster `scheduler` names, then close it;
    the results file is opened once the executor is ready. `team`: the manifest's
    sub-agent tree when the caller loaded it already (in process it is loaded once).
    `trust` is the decision for the agent tree (`assembler.agent.trusting.decide_trust`)
    every task builds on."""
    executor: Executor
    lanes = concurrency or DEFAULT_CONCURRENCY
    if scheduler is None:
        executor = LocalExecutor(manifest, team, trust)
    else:
        try:  # the optional `dask` extra, and heavy: imported only when asked for
            from assembler.eval.cluster import DaskExecutor
        except ImportError as e:
            raise UsageError(
                f"--scheduler needs dask.distributed ({e}): pip install 'agent-assembler[dask]'"
            ) from e
        paths = {run.manifest for run in runs} | {
            run.workspace or manifest.workspace for run in runs
        }
        cluster = await DaskExecutor.start(scheduler, manifest, sorted(paths), trust)
        executor, lanes = cluster, concurrency or cluster.slots
    try:
        writer.open()  # once there is somewhere to run: no empty file for a failed start
        await drive(
            runs, executor, concurrency=lanes, writer=writer, progress=progress, tally=tally
        )
    finally:
        await executor.aclose()


def default_out(spec: EvalSpec, now: datetime | None = None) -> Path:
    """`eval-results/<name>-<UTC time>.jsonl`: a new file per invocation, so a changed
    agent is never judged by an old run; pass `--out` again to resume."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return Path(RESULTS_DIRECTORY) / f"{spec.name}-{stamp}.jsonl"


def session_directory(out: Path) -> Path:
    """Where the runs' session files go: beside the results, `<out>.sessions/<task>/`."""
    return out.with_name(out.name.removesuffix(".jsonl") + ".sessions").absolute()


def check_code(
    spec: EvalSpec, runs: Sequence[RunRequest] = (), manifest: Manifest | None = None
) -> list[ProjectCode]:
    """The eval file's own project code, for the trust question: its `command` checks
    run in every task's workspace on the file's say-so, and the replays its tasks
    name as their model (`scripted:...`), and the sub-agent replays of a replayed
    session, choose the agents' tool calls."""
    commands: dict[str, list[str]] = {}
    for task in spec.tasks:
        for check in task.checks:
            if check.kind == "command":
                commands.setdefault(check.argument, []).append(task.id)
    root = spec.path.parent
    items = [
        ProjectCode(f"check command `{command}` (task {_ids(ids)})", root)
        for command, ids in list(commands.items())[:10]
    ]
    if len(commands) > 10:
        items.append(ProjectCode(f"{len(commands) - 10} more check commands", root))
    if manifest is not None:
        models = [run.model for run in runs if run.model]
        models += [  # a replayed session's sub-agent replays choose their calls too
            f"scripted:{script}"
            for task in spec.tasks
            if task.replay is not None
            for script in child_scripts(task.replay.expected)
        ]
        for model in dict.fromkeys(models):
            items.extend(replay_code(manifest, model))
    return items


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
