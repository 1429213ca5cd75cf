"""Calling extension handlers with a deadline they cannot escape.

A handler that does not finish within `limits.hook_timeout` is abandoned, whatever
it does with cancellation: the caller stops waiting for it at the deadline and
reports it late (a late `tool_call` guard blocks; other kinds fail loudly).

- A coroutine handler runs as its own task. At the deadline the task is cancelled
  once and left: it is never awaited, because a handler that swallows
  `CancelledError` would keep the run waiting forever. The task is kept referenced
  (a pending task nobody holds may be garbage-collected mid-run). One second later
  (`REAP_GRACE`), if it still runs, its coroutine is closed, so a handler that
  ignores cancellation ends anyway and `asyncio.run` does not wait for it at exit;
  `reap()` does the same for all of them at the end of the session.
- A plain function runs in a worker thread, since Python cannot interrupt a call on
  the event loop's own thread. A late one is left running in its thread (a daemon,
  so it never holds up the exit) and that worker is retired; later calls get a new
  one. Consecutive plain handlers of one event go to the worker in one batch, so an
  event costs one thread hop, not one per handler.

Every abandonment becomes a diagnostic naming the extension (`take_diagnostics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import queue
import threading
import time
import weakref
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from assembler.extensions.api import Handler

REAP_GRACE = 1.0
"""Seconds a cancelled handler has to finish cleanly before its coroutine is closed."""


def is_coroutine_handler(handler: Handler) -> bool:
    """A coroutine function (or an object with an async `__call__`) runs as a task on
    the event loop; anything else runs in the worker thread."""
    call = getattr(handler, "__call__", None)  # noqa: B004 (an object with async __call__)
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


@dataclass(frozen=True)
class Subscription:
    """One handler of one extension; `is_coroutine` is decided once, here."""

    extension: str
    handler: Handler
    is_coroutine: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_coroutine", is_coroutine_handler(self.handler))


class Chain(Protocol):
    """How one event's handlers are chained: what each receives, and how its result
    is folded in. `accept` returns True to stop asking the later handlers; it may
    raise `ExtensionError` for a result of the wrong shape."""

    def argument(self) -> Any: ...
    def accept(self, extension: str, result: Any) -> bool: ...


@dataclass(frozen=True)
class HandlerFailure:
    """The handler of `extension` raised `error`, or (error None) did not finish in time."""

    extension: str
    error: BaseException | None = None

    def describe(self, event: str, timeout: float) -> str:
        if self.error is None:
            return f"{event} handler timed out after {timeout:g} s"
        return f"{event} handler failed: {type(self.error).__name__}: {self.error}"


class _Job:
    """A batch of plain handlers for the worker thread. `index` and `started` say
    which handler runs and since when, so the event loop can tell a late one."""

    def __init__(
        self,
        steps: Sequence[Subscription],
        chain: Chain,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[tuple[str, int, Any]],
    ) -> None:
        self.steps = steps
        self.chain = chain
        self.loop = loop
        self.future = future
        self.context = contextvars.copy_context()
        self.index = 0
        self.started = time.monotonic()
        self.abandoned = False
        self.timer: asyncio.TimerHandle | None = None  # a later deadline's check

    def run(self) -> None:
        for index, step in enumerate(self.steps):
            if self.abandoned:
                return
            self.index, self.started = index, time.monotonic()
            try:
                result = self.context.run(step.handler, self.chain.argument())
            except BaseException as e:  # SystemExit in a handler is its failure, not ours
                self._finish("failed", index, e)
                return
            if inspect.isawaitable(result):  # a plain function that returned a coroutine
                self._finish("awaitable", index, result)
                return
            if self.abandoned:
                return
            try:
                stop = self.chain.accept(step.extension, result)
            except BaseException as e:
                self._finish("invalid", index, e)
                return
            if stop:
                self._finish("stopped", index, None)
                return
        self._finish("done", len(self.steps) - 1, None)

    def _finish(self, kind: str, index: int, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(_resolve, self.future, (kind, index, value))


def _settle(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)


def _resolve(future: asyncio.Future[tuple[str, int, Any]], outcome: tuple[str, int, Any]) -> None:
    if not future.done():
        future.set_result(outcome)


class _Worker:
    """One daemon thread running jobs in order until it is retired."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(
            target=self._serve, name="assemble-extension-handlers", daemon=True
        )
        self.thread.start()

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            job.run()
            if job.abandoned:  # retired: a new worker serves the calls after this one
                return

    def retire(self) -> None:
        self.jobs.put(None)


class HandlerCaller:
    """Runs the handlers of one event in order, each within `timeout` seconds."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.abandoned: set[asyncio.Future[Any]] = set()
        self._worker: _Worker | None = None
        self._diagnostics: list[str] = []

    def take_diagnostics(self) -> list[str]:
        """Abandoned handlers not reported yet."""
        taken, self._diagnostics = self._diagnostics, []
        return taken

    async def run(
        self, event: str, subscriptions: Sequence[Subscription], chain: Chain
    ) -> HandlerFailure | None:
        """Call each handler with `chain.argument()` and fold its result with
        `chain.accept`, until the chain stops; the first failure or late handler
        ends the event and is returned."""
        index = 0
        while index < len(subscriptions):
            step = subscriptions[index]
            if step.is_coroutine:
                try:
                    awaitable = step.handler(chain.argument())
                except Exception as e:
                    return HandlerFailure(step.extension, e)
                outcome = await self._await(event, step, awaitable, time.monotonic())
                if isinstance(outcome, HandlerFailure):
                    return outcome
                if chain.accept(step.extension, outcome[0]):
                    return None
                index += 1
                continue
            end = index
            while end < len(subscriptions) and not subscriptions[end].is_coroutine:
                end += 1
            batch = subscriptions[index:end]
            kind, at, value, started = await self._in_worker(event, batch, chain)
            step = batch[at]
            if kind == "late":
                return HandlerFailure(step.extension)
            if kind == "failed":
                return HandlerFailure(step.extension, value)
            if kind == "invalid":
                raise value
            if kind == "stopped":
                return None
            if kind == "awaitable":
                outcome = await self._await(event, step, value, started)
                if isinstance(outcome, HandlerFailure):
                    return outcome
                if chain.accept(step.extension, outcome[0]):
                    return None
                index += at + 1
                continue
            index = end
        return None

    async def _await(
        self, event: str, step: Subscription, awaitable: Awaitable[Any], started: float
    ) -> tuple[Any] | HandlerFailure:
        """The handler's result (in a 1-tuple, as it may be None), or its failure."""
        try:
            task = asyncio.ensure_future(awaitable)
        except TypeError as e:
            return HandlerFailure(step.extension, e)
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[bool] = loop.create_future()  # True: done, False: late
        timer = loop.call_later(started + self.timeout - time.monotonic(), _settle, finished, False)
        task.add_done_callback(lambda _: _settle(finished, True))
        try:
            in_time = await finished
        except asyncio.CancelledError:  # the run itself was cancelled: leave it too
            self._abandon(task, step, event, late=False)
            raise
        finally:
            timer.cancel()
        if not in_time:
            self._abandon(task, step, event)
            return HandlerFailure(step.extension)
        if task.cancelled():
            return HandlerFailure(step.extension, asyncio.CancelledError())
        error = task.exception()
        if error is not None:
            return HandlerFailure(step.extension, error)
        return (task.result(),)

    async def _in_worker(
        self, event: str, batch: Sequence[Subscription], chain: Chain
    ) -> tuple[str, int, Any, float]:
        """Run a batch of plain handlers in the worker thread: (outcome, index of the
        handler it concerns, value, when that handler started)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[str, int, Any]] = loop.create_future()
        job = _Job(batch, chain, loop, future)
        worker = self._worker
        if worker is None:
            worker = self._worker = _Worker()
            # hooks replaced by `agent.reload()` are dropped, not closed: their idle
            # worker thread ends when they are collected
            weakref.finalize(self, worker.retire)
        worker.jobs.put(job)
        timer = loop.call_later(self.timeout, self._check, job)
        try:
            kind, index, value = await future
        except asyncio.CancelledError:  # the run was cancelled: leave the handler
            self._retire(job, worker)
            raise
        finally:
            (job.timer or timer).cancel()
        if kind == "late":
            self._retire(job, worker)
            self._note(batch[index], event, "it still runs in its thread")
        return kind, index, value, job.started

    def _check(self, job: _Job) -> None:
        """At a deadline (on the loop): is the handler running now late? Batches move
        on to the next handler with a deadline of its own, so look again then."""
        if job.future.done():
            return
        late_by = time.monotonic() - (job.started + self.timeout)
        if late_by >= 0:
            job.future.set_result(("late", job.index, None))
        else:
            job.timer = job.loop.call_later(-late_by, self._check, job)

    def _retire(self, job: _Job, worker: _Worker) -> None:
        job.abandoned = True
        worker.retire()
        if self._worker is worker:
            self._worker = None

    def _abandon(
        self, task: asyncio.Future[Any], step: Subscription, event: str, *, late: bool = True
    ) -> None:
        """Cancel once, never await; after `REAP_GRACE` seconds, close what ignored it."""
        task.cancel()
        if task.done():
            return
        self.abandoned.add(task)
        task.add_done_callback(self._forget)
        asyncio.get_running_loop().call_later(REAP_GRACE, self._close, task)
        if late:
            self._note(step, event, "it was cancelled and is no longer awaited")

    def _forget(self, task: asyncio.Future[Any]) -> None:
        self.abandoned.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: an abandoned handler's error is not news

    def _note(self, step: Subscription, event: str, what: str) -> None:
        self._diagnostics.append(
            f"extension `{step.extension}`: {event} handler did not finish within "
            f"{self.timeout:g} s (limits.hook_timeout) and was abandoned; {what}"
        )

    def _close(self, task: asyncio.Future[Any]) -> None:
        """End a cancelled handler that is still running: close its coroutine (a
        `GeneratorExit` at its `await` ends even a loop that swallows every
        `CancelledError`), then cancel the task, which finishes at once."""
        if task.done():
            return
        coroutine = task.get_coro() if isinstance(task, asyncio.Task) else None
        close = getattr(coroutine, "close", None)
        try:
            if close is not None:
                close()
        except RuntimeError:
            self._diagnostics.append(
                f"an abandoned extension handler ({coroutine!r}) ignores both cancellation "
                "and GeneratorExit; it keeps running, and exiting may wait for it"
            )
        task.cancel()

    async def reap(self) -> None:
        """At the end of the session: cancel abandoned handlers that still run, give
        them up to `REAP_GRACE` seconds, close the rest (so nothing waits for them at
        exit), and retire the worker thread."""
        pending = [task for task in self.abandoned if not task.done()]
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=min(self.timeout, REAP_GRACE))
            for task in pending:
                self._close(task)
        if self._worker is not None:
            self._worker.retire()
            self._worker = None
