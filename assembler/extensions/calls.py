"""Calling extension handlers with a deadline they cannot escape, cheaply when they are quick.

A handler that does not finish within `limits.hook_timeout` is abandoned, whatever
it does with cancellation: the caller stops waiting for it at the deadline and
reports it late (a late `tool_call` guard blocks; other kinds fail loudly).

- A coroutine handler's first step runs at once, on the loop, as a task's would
  (in a copy of the context, as the current task): most handlers finish there, and
  then cost no task, timer or loop iteration (issue 21). One that awaits something
  goes on as a task, waited for until its deadline. At the deadline the task is
  cancelled once and left: it is never awaited, because a handler that swallows
  `CancelledError` would keep the run waiting forever. The task is kept referenced
  (a pending task nobody holds may be garbage-collected mid-run). One second later
  (`REAP_GRACE`), if it still runs, its coroutine is closed, so a handler that
  ignores cancellation ends anyway and `asyncio.run` does not wait for it at exit;
  `reap()` does the same for all of them at the end of the session. (A first step
  that blocks the loop cannot be stopped: nothing on the loop's thread can.)
- A plain function runs in a worker thread (`handler_thread`), since Python cannot
  interrupt a call on the event loop's own thread; the loop waits for it in place for
  up to `BRIEF_WAIT`, then through the loop until its deadline. After a wait in place
  that was not enough (slow handlers, or a thousand of them) the next events go
  straight through the loop, until one is answered within `BRIEF_WAIT` again: slow
  handlers never cost the loop that wait on every event. A late one is left
  running in its thread and that thread is retired; later jobs get a new one.
- A notification (`notify`: `turn_start`, `turn_end`, `session_start`) whose handlers
  are all plain is not waited for: its job is queued (`post`, which the hooks call
  without an `await`) and the run goes on. It reaches
  the thread with the next job of an event (one wake-up of the thread for both: a
  turn's `turn_end` and the next `turn_start` go with the next `context`), or on the
  loop's next iteration if nothing comes first. The next event waits for it
  (`settle`), usually for free, since the thread runs it before that event's own
  handlers; so does the end of a run. Its deadline is watched all the same, by one
  timer for all the notifications in flight (not one per notification), and its
  failure is returned by the next `run` or `settle`, naming its event, before any
  model request or tool call that follows it. An event whose batch answers within
  `BRIEF_WAIT` costs no future, task or timer (issue 21, round 3).

Every abandonment becomes a diagnostic naming the extension (`take_diagnostics`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
import weakref
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from assembler.extensions.eager import start_eagerly
from assembler.extensions.handler_thread import (
    BRIEF_WAIT,
    HandlerThread,
    Outcome,
    PlainJob,
    watch_deadline,
)
from assembler.extensions.subscriptions import Chain, HandlerFailure, Notification, Subscription

REAP_GRACE = 1.0
"""Seconds a cancelled handler has to finish cleanly before its coroutine is closed."""


@dataclass(slots=True)
class _InFlight:
    """A notification's plain handlers, queued and not waited for."""

    event: str
    steps: Sequence[Subscription]
    job: PlainJob


class HandlerCaller:
    """Runs the handlers of one event in order, each within `timeout` seconds."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.abandoned: set[asyncio.Future[Any]] = set()
        self._thread: HandlerThread | None = None
        self._diagnostics: list[str] = []
        self._in_flight: list[_InFlight] = []
        self._unsent: list[PlainJob] = []  # notifications' jobs not put to the thread yet
        self._send_soon = False  # a `_send` is scheduled on the loop
        self._brief_wait = min(BRIEF_WAIT, timeout)  # 0 after a wait in place that was not enough
        self._watchdog: asyncio.TimerHandle | None = None  # for the notifications in flight
        self._watchdog_loop: asyncio.AbstractEventLoop | None = None

    @property
    def busy(self) -> bool:  # notifications are in flight: `settle` has work
        return bool(self._in_flight)

    def take_diagnostics(self) -> list[str]:
        """Abandoned handlers not reported yet."""
        taken, self._diagnostics = self._diagnostics, []
        return taken

    # -- dispatching -------------------------------------------------------------------

    async def run(
        self, event: str, subscriptions: Sequence[Subscription], chain: Chain
    ) -> HandlerFailure | None:
        """Call each handler with `chain.argument()` and fold its result with
        `chain.accept`, until the chain stops; the first failure or late handler
        ends the event and is returned. Notifications still in flight are waited for
        first, and a failure among them is returned instead (naming its event)."""
        if self._in_flight and (not subscriptions or subscriptions[0].is_coroutine):
            failure = await self.settle()
            if failure is not None:
                return failure
        index, count = 0, len(subscriptions)
        while index < count:
            step = subscriptions[index]
            if step.is_coroutine:
                outcome = await self._call_coroutine(event, step, chain)
                if isinstance(outcome, HandlerFailure):
                    return outcome
                if outcome[0] is not None and chain.accept(step.extension, outcome[0]):
                    return None
                index += 1
                continue
            end = index + 1
            while end < count and not subscriptions[end].is_coroutine:
                end += 1
            batch = subscriptions if index == 0 and end == count else subscriptions[index:end]
            job = self._submit(batch, chain)  # behind the notifications in flight, if any
            started = time.monotonic()
            ended = job.wait_briefly(self._brief_wait)  # most batches end here
            if ended is None:
                ended = await self._wait_through_loop(event, job, batch, started)
            elif not self._brief_wait:  # answered without waiting at all: quick again
                self._brief_wait = min(BRIEF_WAIT, self.timeout)
            if self._in_flight and not self._take_done():  # done before this job, unless late
                failure = await self.settle()
                if failure is not None:
                    return failure
            if ended[0] == "done":
                index = end
                continue
            result = await self._after_batch(event, batch, chain, job, ended)
            if not isinstance(result, int):
                return result
            if result < 0:
                return None
            index += result
        return None

    async def notify(
        self, event: str, subscriptions: Sequence[Subscription], argument: Any
    ) -> HandlerFailure | None:
        """Tell every handler of `event`. All plain: queued and not waited for (see
        the module doc); otherwise run as `run` does, in order, waited for."""
        if not subscriptions or self.post(event, subscriptions, argument):
            return None
        return await self.run(event, subscriptions, Notification(argument))

    def post(self, event: str, subscriptions: Sequence[Subscription], argument: Any) -> bool:
        """`notify` without a coroutine when every handler is plain (a notification
        costs no await then, issue 21): queued, True; False, with nothing done, when a
        coroutine handler is among them (then `notify` must wait for them)."""
        for step in subscriptions:
            if step.is_coroutine:
                return False
        loop = asyncio.get_running_loop()
        job = PlainJob(subscriptions, Notification(argument), loop)
        self._unsent.append(job)
        if not self._send_soon:
            self._send_soon = True
            loop.call_soon(self._send_scheduled)
        self._in_flight.append(_InFlight(event, subscriptions, job))
        if self._watchdog is None or self._watchdog_loop is not loop:
            self._arm_watchdog(loop, self.timeout)
        return True

    def _take_done(self) -> bool:
        """Drop the notifications at the front that ended well; True if none is left."""
        flights = self._in_flight
        while flights:
            outcome = flights[0].job.outcome
            if outcome is None or outcome[0] != "done":
                return False
            flights.pop(0)
        return True

    async def settle(self) -> HandlerFailure | None:
        """Wait for the notifications in flight; the first failure, naming its event."""
        self._send()
        first: HandlerFailure | None = None
        while self._in_flight:
            flight = self._in_flight.pop(0)
            outcome = flight.job.outcome
            if outcome is None:
                outcome = await self._wait(flight.event, flight.job, flight.steps)
            if outcome[0] == "done":
                continue
            result = await self._after_batch(
                flight.event, flight.steps, flight.job.chain, flight.job, outcome
            )
            if isinstance(result, int) and 0 <= result < len(flight.steps):
                rest = flight.steps[result:]
                result = await self.run(flight.event, rest, flight.job.chain)
            if isinstance(result, HandlerFailure) and first is None:
                first = HandlerFailure(result.extension, result.error, result.event or flight.event)
        return first

    async def _after_batch(
        self,
        event: str,
        batch: Sequence[Subscription],
        chain: Chain,
        job: PlainJob,
        outcome: Outcome,
    ) -> HandlerFailure | int | None:
        """What a plain batch's outcome means: a failure, -1 (the chain stopped), or
        how many handlers of the batch are done (the rest, if any, still to run)."""
        kind, at, value = outcome
        step = batch[at]
        if kind == "late":
            return HandlerFailure(step.extension)
        if kind == "failed":
            return HandlerFailure(step.extension, value)
        if kind == "invalid":
            raise value
        if kind == "stopped":
            return -1
        if kind == "awaitable":
            started = job.started if job.started is not None else time.monotonic()
            awaited = await self._await(event, step, value, started)
            if isinstance(awaited, HandlerFailure):
                return awaited
            return -1 if chain.accept(step.extension, awaited[0]) else at + 1
        return len(batch)

    # -- plain handlers --------------------------------------------------------------------

    def _submit(self, batch: Sequence[Subscription], chain: Chain) -> PlainJob:
        job = PlainJob(batch, chain, asyncio.get_running_loop())
        self._unsent.append(job)
        self._send()
        return job

    def _send(self) -> None:
        """Give the jobs not sent yet to the thread, in order, in one wake-up."""
        if self._unsent:
            unsent, self._unsent = self._unsent, []
            self._handler_thread().send(unsent)

    def _send_scheduled(self) -> None:
        self._send_soon = False
        self._send()

    def _handler_thread(self) -> HandlerThread:
        thread = self._thread
        if thread is None:
            thread = self._thread = HandlerThread()
            # hooks replaced by `agent.reload()` are dropped, not closed: their idle
            # thread ends when they are collected
            weakref.finalize(self, thread.retire)
        return thread

    async def _wait(self, event: str, job: PlainJob, batch: Sequence[Subscription]) -> Outcome:
        """The job's outcome: in place when it is quick, else through the loop, with
        its deadline watched."""
        started = time.monotonic()
        outcome = job.wait_briefly(self._brief_wait)
        if outcome is not None:
            return outcome
        return await self._wait_through_loop(event, job, batch, started)

    async def _wait_through_loop(
        self, event: str, job: PlainJob, batch: Sequence[Subscription], started: float
    ) -> Outcome:
        """The job's outcome, waited for through the loop until its deadline."""
        future = job.waited_future()
        watch = watch_deadline(job, self.timeout, lambda late: self._late(late, event, batch))
        try:
            outcome = await future
            quick = time.monotonic() - started < BRIEF_WAIT
            self._brief_wait = min(BRIEF_WAIT, self.timeout) if quick else 0.0
            return outcome
        except asyncio.CancelledError:  # the run was cancelled: leave the handler
            job.abandon()
            self._retire()
            raise
        finally:
            watch.cancel()

    def _arm_watchdog(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        # weakly: hooks `agent.reload()` dropped are collected without waiting for it
        self._watchdog = loop.call_later(delay, _watch_in_flight, weakref.ref(self))
        self._watchdog_loop = loop

    def _watch_in_flight(self) -> None:
        """Declare late each notification in flight whose running handler is past its
        deadline; look again at the next deadline while any runs or waits."""
        loop, self._watchdog = self._watchdog_loop, None
        delay: float | None = None
        for flight in list(self._in_flight):
            job = flight.job
            if job.outcome is not None:
                continue
            late_by = job.late_by(self.timeout)
            if late_by is None or late_by < 0:  # queued (its clock has not started), or in time
                wait = self.timeout if late_by is None else -late_by
                delay = wait if delay is None else min(delay, wait)
            elif job.declare_late():
                self._late(job, flight.event, flight.steps)
        if delay is not None and loop is not None and not loop.is_closed():
            self._arm_watchdog(loop, delay)

    def _late(self, job: PlainJob, event: str, batch: Sequence[Subscription]) -> None:
        """A job was declared late: its thread is retired, the jobs queued behind it
        go to a new one."""
        self._retire()
        self._note(batch[job.index], event, "it still runs in its thread")

    def _retire(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        waiting = thread.retire()
        if waiting:
            self._handler_thread().send(waiting)

    # -- coroutine handlers ----------------------------------------------------------------

    async def _call_coroutine(
        self, event: str, step: Subscription, chain: Chain
    ) -> tuple[Any] | HandlerFailure:
        started = time.monotonic()
        try:
            awaitable = step.handler(chain.argument())
        except Exception as e:
            return HandlerFailure(step.extension, e)
        return await self._await(event, step, awaitable, started)

    async def _await(
        self, event: str, step: Subscription, awaitable: Awaitable[Any], started: float
    ) -> tuple[Any] | HandlerFailure:
        """The handler's result (in a 1-tuple, as it may be None), or its failure."""
        loop = asyncio.get_running_loop()
        if inspect.iscoroutine(awaitable):
            first = start_eagerly(loop, awaitable, contextvars.copy_context())
            if isinstance(first, tuple):
                return first
            if isinstance(first, BaseException):
                return HandlerFailure(step.extension, first)
            task: asyncio.Future[Any] = first
        else:
            try:
                task = asyncio.ensure_future(awaitable)
            except TypeError as e:
                return HandlerFailure(step.extension, e)
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
        for flight in self._in_flight:
            flight.job.abandon()
        self._in_flight.clear()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = self._watchdog_loop = None
        self._unsent.clear()
        pending = [task for task in self.abandoned if not task.done()]
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=min(self.timeout, REAP_GRACE))
            for task in pending:
                self._close(task)
        if self._thread is not None:
            self._thread.retire()
            self._thread = None


def _watch_in_flight(caller: weakref.ref[HandlerCaller]) -> None:
    alive = caller()
    if alive is not None:
        alive._watch_in_flight()


def _settle(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)
