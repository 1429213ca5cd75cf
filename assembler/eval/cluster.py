"""Task runs on a `dask.distributed` cluster (`--scheduler tcp://HOST:PORT | local:N`).

Nothing else changes: the same `RunRequest`, the same `run_task` on the worker, the same
records, streamed back to the client as they finish; only the client writes the
results file. A run travels as plain data, and the worker builds the agent from the
manifest file at the path the client named, so workers need agent-assembler installed
(the same version: it is checked) and the project at the same path (a shared
filesystem, or the same checkout or image everywhere). Sessions are written by the
worker, at the client's session path on the worker's filesystem.

`local:N` starts a `LocalCluster` of N worker processes with one thread each, whose
scheduler gives up on a run the first time its worker dies (`allowed-failures: 0`): the
run is recorded as an error and the evaluation goes on, rather than a crashing run
taking down three more workers. A remote scheduler keeps its own setting.

This module imports `distributed` (the optional `dask` extra); nothing imports it
unless `--scheduler` is given.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dask
from distributed import Client, KilledWorker, LocalCluster, get_worker

from assembler.errors import UsageError
from assembler.eval.execute import model_label, run_task
from assembler.eval.plan import parse_scheduler
from assembler.eval.records import RunRecord
from assembler.eval.spec import RunRequest
from assembler.manifest.model import Manifest
from assembler.trust import TrustDecision
from assembler.version import __version__

# distributed's annotations describe its synchronous API; with `asynchronous=True` the
# same methods return awaitables, so the client and cluster are handled as `Any` here.
_Client: Any = Client
_LocalCluster: Any = LocalCluster

#: Seconds a run may take on the cluster beyond its own limits (copying, queueing).
SLACK = 120.0
_CONNECT_TIMEOUT = 30.0


# The runs in progress in this worker process, by run id, so `stop_runs` can reach
# them: Dask cannot interrupt a running function, and a worker that is merely shut
# down would leave the runs' commands running (they have sessions of their own).
_RUNNING: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = {}
_RUNNING_LOCK = threading.Lock()


def run_on_worker(
    payload: dict[str, Any], run_id: str = "", trust: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a worker runs for one task run: data in, data out, an event loop of its own.
    `trust` is the client's trust decision for the agent tree, as data."""
    request = RunRequest.from_dict(payload)
    decision = TrustDecision.from_dict(trust) if trust is not None else None
    try:
        where = get_worker().address
    except ValueError:  # called outside a worker (tests, a debugger)
        where = f"{socket.gethostname()}:{os.getpid()}"

    async def tracked() -> RunRecord:
        task = asyncio.current_task()
        assert task is not None
        with _RUNNING_LOCK:
            _RUNNING[run_id] = (asyncio.get_running_loop(), task)
        try:
            return await run_task(request, worker=where, trust=decision)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.pop(run_id, None)

    return asyncio.run(tracked()).to_dict()


async def stop_runs(run_ids: Sequence[str], wait: float = 10.0) -> int:
    """Cancel these runs if this worker has them (each then stops its commands, closes
    its agent and removes its copy, as on Ctrl-C in process); wait for them to end."""
    with _RUNNING_LOCK:
        targets = [_RUNNING[i] for i in run_ids if i in _RUNNING]
    for loop, task in targets:
        loop.call_soon_threadsafe(task.cancel)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with _RUNNING_LOCK:
            if not any(i in _RUNNING for i in run_ids):
                break
        await asyncio.sleep(0.05)
    return len(targets)


def dask_setup(worker: object) -> None:
    """Run in each `local:N` worker process as it starts (Dask's preload hook): Ctrl-C
    in a terminal reaches the whole process group, and the client alone answers it,
    stopping the runs on the workers in order (`stop_runs`) before closing them; a
    worker interrupted by itself would only print a traceback and leave its runs'
    commands behind."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def probe(paths: Sequence[str]) -> dict[str, Any]:
    """Run on every worker before any task: its version, and the paths it cannot read."""
    missing = [path for path in paths if not os.access(path, os.R_OK)]
    return {"version": __version__, "missing": missing, "pid": os.getpid()}


class DaskExecutor:
    """Runs task runs on a cluster; `slots` is how many it runs at once (its threads)."""

    def __init__(
        self, client: Any, cluster: Any, manifest: Manifest, trust: TrustDecision | None = None
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.manifest = manifest
        self.trust = trust
        self.slots = 1
        self._in_flight: set[str] = set()

    @classmethod
    async def start(
        cls,
        scheduler: str,
        manifest: Manifest,
        paths: Sequence[Path],
        trust: TrustDecision | None = None,
    ) -> DaskExecutor:
        target = parse_scheduler(scheduler)
        cluster = None
        try:
            if isinstance(target, int):
                with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                    cluster = await _LocalCluster(
                        n_workers=target,
                        preload=["assembler.eval.cluster"],  # dask_setup, below
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",  # a scheduler runs what it is sent: never public
                        asynchronous=True,
                        dashboard_address=None,
                        # its metrics server on a free loopback port, no dashboard
                        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                        silence_logs=logging.CRITICAL,  # run errors are in the records
                    )
                client = await _Client(cluster, asynchronous=True)
            else:
                client = await _Client(target, asynchronous=True, timeout=_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as e:
            if cluster is not None:
                await cluster.close()
            raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from e
        executor = cls(client, cluster, manifest, trust)
        try:
            await executor._check_workers(paths)
        except BaseException:
            await executor.aclose()
            raise
        return executor

    async def _check_workers(self, paths: Sequence[Path]) -> None:
        try:
            await self.client.wait_for_workers(1, timeout=_CONNECT_TIMEOUT)
        except TimeoutError as e:
            raise UsageError("the Dask cluster has no workers") from e
        answers: dict[str, dict[str, Any]] = await self.client.run(probe, [str(p) for p in paths])
        for address, answer in sorted(answers.items()):
            if answer["version"] != __version__:
                raise UsageError(
                    f"the Dask worker {address} has agent-assembler {answer['version']}, and "
                    f"this client {__version__}: install the same version on the workers"
                )
            if answer["missing"]:
                raise UsageError(
                    f"the Dask worker {address} cannot read {', '.join(answer['missing'])}: "
                    "workers build agents from the files at the paths the client names "
                    "(share the project at the same path, see README, Evaluations)"
                )
        threads: dict[str, int] = await self.client.nthreads()
        self.slots = max(1, sum(threads.values()))

    async def run(self, request: RunRequest) -> RunRecord:
        run_id = f"assemble-eval-{request.task.id}-{request.repeat}-{uuid.uuid4().hex[:8]}"
        future = self.client.submit(
            run_on_worker,
            request.to_dict(),
            run_id,
            self.trust.to_dict() if self.trust is not None else None,
            key=run_id,
            pure=False,
        )
        checks = sum(1 for c in request.task.checks if c.kind == "command")
        deadline = request.timeout + checks * request.check_timeout + SLACK
        self._in_flight.add(run_id)
        try:
            data = await asyncio.wait_for(_result(future), deadline)
        except asyncio.CancelledError:  # Ctrl-C: `aclose` stops it on its worker
            await self._cancel(future)
            raise
        except KilledWorker as e:
            self._in_flight.discard(run_id)
            return self._error(request, f"the worker process running this task died ({e})")
        except TimeoutError:
            await self._stop([run_id])
            await self._cancel(future)
            return self._error(request, f"no result from the cluster within {deadline:g} s")
        except Exception as e:  # the cluster failed this run; the evaluation goes on
            self._in_flight.discard(run_id)
            return self._error(request, f"cluster error: {type(e).__name__}: {e}")
        self._in_flight.discard(run_id)
        return RunRecord.from_dict(data)

    async def _stop(self, run_ids: list[str]) -> None:
        """Stop runs on whichever worker has them (best effort: a worker may be gone)."""
        for run_id in run_ids:
            self._in_flight.discard(run_id)
        try:
            await asyncio.wait_for(self.client.run(stop_runs, run_ids), 30)
        except Exception:
            return

    def _error(self, request: RunRequest, message: str) -> RunRecord:
        return RunRecord(
            eval=request.eval_name,
            task=request.task.id,
            repeat=request.repeat,
            status="error",
            model=model_label(request, self.manifest),
            error=message,
            worker="dask",
            metadata=request.task.metadata,
        )

    async def _cancel(self, future: Any) -> None:
        try:
            await asyncio.wait_for(future.cancel(), 10)
        except Exception:  # best effort: the client is closed next anyway
            return

    async def aclose(self) -> None:
        try:
            if self._in_flight:  # interrupted: stop what still runs on the workers
                await self._stop(sorted(self._in_flight))
            await self.client.close()
        finally:
            if self.cluster is not None:
                await self.cluster.close()


async def _result(future: Any) -> dict[str, Any]:
    result: dict[str, Any] = await future
    return result
