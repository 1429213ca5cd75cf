"""One task run, start to finish: fresh workspace copy, fresh agent, run, checks.

The same coroutine runs in process and on a Dask worker (`run_request` is the
worker's entry point: plain data in, plain data out). Whatever goes wrong inside a run
becomes that run's `error` record; only cancellation (Ctrl-C) propagates, after the
agent was closed and the copy removed.

Agents are built under one process-wide lock: building parses Python sources, and
`ast.parse` from several threads of one process has crashed CPython 3.11 (`SystemError:
AST constructor recursion depth mismatch`). In process everything runs on one event
loop thread anyway; a Dask worker with several threads builds one agent at a time.
(`cluster.py` holds the worker's entry point.)
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assembler.agent.agent import Agent
from assembler.agent.build import build_agent
from assembler.agent.model_choice import default_label
from assembler.agent.team import TeamMember, load_team
from assembler.errors import AssemblerError
from assembler.eval.checks import CallSummary, CheckResult, run_checks, unchanged_patterns
from assembler.eval.records import RunRecord, Status
from assembler.eval.replay_run import ReplaySetup, replay_setup, start_workspace
from assembler.eval.spec import RunRequest
from assembler.eval.workspace import (
    copy_workspace,
    digests,
    rebase_team,
    scratch_directory,
    sweep_stale,
)
from assembler.manifest.model import Manifest
from assembler.regress.drive import drive, ends_interrupted
from assembler.regress.replay import install
from assembler.runner.events import (
    Event,
    RunEnd,
    ToolCallBlocked,
    ToolCallProposed,
    ToolCallResult,
    TurnEnd,
    UsageEvent,
)
from assembler.trust import TrustDecision
from assembler.validation.load import load_manifest

BUILD_LOCK = threading.Lock()
"""Held while a manifest is loaded and an agent built: one thread at a time per process."""

MAX_ANSWER_CHARS = 100_000
_ARGUMENT_KEYS = ("path", "command", "pattern", "query", "url")


def model_label(request: RunRequest, manifest: Manifest) -> str:
    """The model a run uses, as `provider:name`: the request's, else the manifest's,
    else the user's default."""
    return request.model or default_label(manifest)


@dataclass
class _Observed:
    """What the event stream showed: calls and their fate, turns, usage, the end."""

    calls: dict[str, CallSummary] = field(default_factory=dict)
    turns: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    end: RunEnd | None = None

    def add(self, event: Event) -> None:
        if isinstance(event, ToolCallProposed):
            key = event.call.id or str(len(self.calls))
            self.calls[key] = CallSummary(event.call.name, _argument(event.call.arguments), "")
        elif isinstance(event, ToolCallBlocked):
            self._outcome(event.call.id, f"blocked by {event.blocked_by}: {event.reason}")
        elif isinstance(event, ToolCallResult):
            if event.executed:
                self._outcome(event.call.id, "error" if event.is_error else "ran", keep=True)
            else:
                self._outcome(event.call.id, "not run: " + event.content[:120], keep=True)
        elif isinstance(event, TurnEnd):
            self.turns = event.turn
        elif isinstance(event, UsageEvent):
            self.usage = event.total.to_dict()
        elif isinstance(event, RunEnd):
            self.end = event
            self.turns = max(self.turns, event.turns)

    def _outcome(self, call_id: str, outcome: str, *, keep: bool = False) -> None:
        call = self.calls.get(call_id)
        if call is not None and not (keep and call.outcome.startswith("blocked")):
            self.calls[call_id] = CallSummary(call.name, call.argument, outcome)


@dataclass
class _Run:
    """One run in progress: what is known so far, turned into a record at the end."""

    request: RunRequest
    worker: str
    started: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds")
    )
    clock: float = field(default_factory=time.perf_counter)
    observed: _Observed = field(default_factory=_Observed)
    checks: list[CheckResult] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str = ""
    model: str = ""
    session: str = ""
    replay: ReplaySetup | None = None

    def record(self) -> RunRecord:
        end, error = self.observed.end, self.error
        replay = self.replay.check() if self.replay is not None else None
        if replay is not None and not replay.passed and not self.error:
            # a strict replay stopped at its first divergence: the task failed, and
            # the `replay` check says where (the run's own end is that same stop)
            self.checks = [replay]
            end, error = None, ""
            status: Status = "failed"
        else:
            if replay is not None:
                self.checks = [replay, *self.checks]
            if not error and end is None:
                error = "the run ended without a result"
            if not error and end is not None and end.reason == "error":
                error = end.message or "the run failed"
            status = "error"
            if not error and end is not None:
                completed = end.reason == "completed" or (
                    end.reason == "cancelled" and ends_interrupted(self.request.task.messages)
                )
                passed = completed and all(c.passed for c in self.checks)
                status = "passed" if passed else "failed"
        last = self.observed.end
        return RunRecord(
            eval=self.request.eval_name,
            task=self.request.task.id,
            repeat=self.request.repeat,
            status=status,
            model=self.model,
            reason=last.reason if last is not None else "",
            message=last.message if last is not None else "",
            error=error,
            checks=tuple(self.checks),
            answer=(last.text if last is not None else "")[:MAX_ANSWER_CHARS],
            output=last.output if last is not None else None,
            turns=self.observed.turns,
            usage=last.usage.to_dict() if last is not None else dict(self.observed.usage),
            tool_calls=tuple(self.observed.calls.values()),
            duration_s=time.perf_counter() - self.clock,
            timings=self.timings,
            session=self.session,
            worker=self.worker,
            started=self.started,
            metadata=self.request.task.metadata,
            replay=self.replay.note() if self.replay is not None else "",
        )


async def run_task(
    request: RunRequest,
    *,
    manifest: Manifest | None = None,
    worker: str = "local",
    team: TeamMember | None = None,
    trust: TrustDecision | None = None,
) -> RunRecord:
    """Run `request` in a fresh copy of its workspace and judge it.

    `manifest`: the agent, already loaded and validated, and `team` its sub-agent tree
    (in process both are loaded once per evaluation); without them, they are loaded
    from `request.manifest` (a Dask worker, for each run it is given). `trust`: the
    decision made for the whole agent tree before any task started; the agent is
    built on it (without it, the user's trust store decides, and nobody is asked).
    """
    run = _Run(request, worker, model=request.model or "")
    _sweep_once()
    scratch = scratch_directory()
    try:
        try:
            await _attempt(run, scratch, manifest, team, trust)
        except TimeoutError:
            run.error = f"timed out after {request.timeout:g} s"
        except AssemblerError as e:
            run.error = str(e)
        except OSError as e:  # copying the workspace, the session directory
            run.error = f"{type(e).__name__}: {e}"
        except Exception as e:  # a bug, or in project code: this run's error, not the eval's
            run.error = f"internal error: {type(e).__name__}: {e}"
    finally:
        mark = time.perf_counter()
        await _remove(scratch)
        run.timings["cleanup"] = time.perf_counter() - mark
    return run.record()


async def _attempt(
    run: _Run,
    scratch: Path,
    manifest: Manifest | None,
    team: TeamMember | None,
    trust: TrustDecision | None,
) -> None:
    """Copy, build, run (within the task's timeout), then check, timing each step."""
    request = run.request
    if manifest is None or team is None:
        with BUILD_LOCK:
            manifest = manifest or load_manifest(request.manifest)
            team = load_team(manifest)
    run.model = model_label(request, manifest)
    mark = time.perf_counter()
    # File copying and hashing wait on the disk: in a thread, so other runs' models and
    # commands go on meanwhile (agents are only ever built on this thread).
    workspace = await asyncio.to_thread(start_workspace, request, scratch)
    if workspace is None:
        workspace = await asyncio.to_thread(
            copy_workspace, request.workspace or manifest.workspace, scratch
        )
    run.replay = replay_setup(request, manifest, workspace)
    patterns = unchanged_patterns(request.task.checks)
    before = await asyncio.to_thread(digests, workspace, patterns) if patterns else {}
    run.timings["copy"] = time.perf_counter() - mark
    async with asyncio.timeout(request.timeout):
        mark = time.perf_counter()
        with BUILD_LOCK:
            agent = _build(request, team, workspace, trust, run.replay)
        run.timings["build"] = time.perf_counter() - mark
        run.session = str(agent.session.path) if agent.session is not None else ""
        mark = time.perf_counter()
        task = request.task
        try:
            async for event in drive(
                agent,
                task.prompt or None,  # none: the agent's `task:`
                task.messages,
                params=task.params,
                max_turns=request.max_turns,
                stop_on_error=run.replay is not None and run.replay.strict,
            ):
                run.observed.add(event)
        finally:
            run.timings["run"] = time.perf_counter() - mark
            mark = time.perf_counter()
            await agent.aclose()
            run.timings["close"] = time.perf_counter() - mark
    end = run.observed.end
    if end is None or end.reason == "error":
        return
    mark = time.perf_counter()
    run.checks = await run_checks(
        request.task.checks,
        workspace=workspace,
        answer=end.text,
        calls=list(run.observed.calls.values()),
        before=before,
        check_timeout=request.check_timeout,
        output=end.output,
        sandbox=manifest.sandbox,
    )
    run.timings["checks"] = time.perf_counter() - mark


_swept = threading.Event()


def _sweep_once() -> None:
    """The first run in a process removes copies that dead processes of this host left
    behind (a killed Dask worker cannot clean up; its replacement does)."""
    if not _swept.is_set():
        _swept.set()
        sweep_stale()


async def _remove(scratch: Path) -> None:
    """Remove the copy in a thread; when cancelled again meanwhile (a second Ctrl-C),
    finish here rather than leave it behind."""
    try:
        await asyncio.to_thread(shutil.rmtree, scratch, ignore_errors=True)
    except asyncio.CancelledError:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _build(
    request: RunRequest,
    team: TeamMember,
    workspace: Path,
    trust: TrustDecision | None,
    replay: ReplaySetup | None,
) -> Agent:
    """The agent working in the copy `workspace`, with every sub-agent that works in
    the task's workspace moved there too; its code must be what `trust` covered; a
    replay's provider as its model."""
    team = rebase_team(team, team.manifest.workspace, workspace)
    agent = build_agent(
        team.manifest,
        model=replay.model if replay is not None else request.model,
        provider=replay.provider if replay is not None else None,
        session_dir=request.session_dir / request.task.id,
        trust=trust,  # decided once, for the whole agent tree, before any task started
        team=team,
    )
    if replay is not None:
        install(agent, replay.provider)
    return agent


def _argument(arguments: Mapping[str, Any] | None) -> str:
    """The call's main argument, shortened: `path`, `command`, ... or the first string."""
    if not arguments:
        return ""
    value = next((arguments[k] for k in _ARGUMENT_KEYS if isinstance(arguments.get(k), str)), None)
    if value is None:
        value = next((v for v in arguments.values() if isinstance(v, str)), "")
    text = " ".join(str(value).split())
    return text if len(text) <= 80 else text[:79] + "…"
