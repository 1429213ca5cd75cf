"""Plain (synchronous) extension handlers, run in a thread the event loop can leave.

Python cannot interrupt a function running on the event loop's own thread, so a plain
handler runs in a worker thread, where a late one can be left behind: the loop stops
waiting at its deadline, retires that worker (a daemon thread, so it never holds up
the exit) and gives later jobs to a new one. Consecutive plain handlers of one event
go to the worker as one `PlainJob`, so an event costs one trip to the thread, not one
per handler.

The trip is the cost (issue 21): a wake-up through the event loop's self-pipe, a loop
iteration and a future cost 35-120 µs per event, five events a turn. So the loop first
waits in place for a job (`wait_briefly`, at most `BRIEF_WAIT` seconds, a lock handed
over between the two threads: about a tenth of that), as a no-op or quick handler
finishes well within it; only a job still running then is waited for through the loop,
with its deadline. A job may also run without anyone waiting (a notification): its
deadline is watched all the same. The thread is woken through a pipe of its own
(`HandlerThread`), which hands it the GIL at once: that halved what a trip costs
(issue 21, round 4).
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import inspect
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from assembler.extensions.api import Handler

BRIEF_WAIT = 0.002
"""Seconds the event loop waits in place for a plain handler before it waits through the
loop: long enough for a quick handler and a thread switch on a busy machine, short
enough that a slow handler barely holds up the loop."""

Outcome = tuple[str, int, Any]
"""(kind, index of the handler it concerns, value): `done`, `stopped` (the chain
ended early), `failed` (value: the exception), `invalid` (the chain refused the
result: the exception), `awaitable` (a plain handler returned one: the value), `late`."""


class Step(Protocol):
    @property
    def extension(self) -> str: ...
    @property
    def handler(self) -> Handler: ...


class Chain(Protocol):
    """See `calls.Chain`."""

    def argument(self) -> Any: ...
    def accept(self, extension: str, result: Any) -> bool: ...


class PlainJob:
    """A batch of plain handlers of one event, for the worker thread. Its outcome is
    set once, by the thread or (when late) by the loop, whichever comes first."""

    __slots__ = (
        "_finished",
        "_guard",
        "abandoned",
        "chain",
        "context",
        "future",
        "index",
        "loop",
        "outcome",
        "started",
        "steps",
    )  # fmt: skip

    def __init__(
        self, steps: Sequence[Step], chain: Chain, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.steps = steps
        self.chain = chain
        self.loop = loop
        self.context = contextvars.copy_context()
        self.index = 0
        self.started: float | None = None  # when the handler at `index` started; None: queued
        self.outcome: Outcome | None = None
        self.abandoned = False
        self.future: asyncio.Future[Outcome] | None = None  # once waited for through the loop
        self._finished = _thread.allocate_lock()
        self._finished.acquire()  # released once, when `outcome` is set
        self._guard = threading.Lock()

    # -- in the worker thread ------------------------------------------------------

    def run(self) -> None:
        chain, call = self.chain, self.context.run
        argument = chain.argument()  # changes only when a handler answers (`Chain`)
        for index, step in enumerate(self.steps):
            if self.abandoned:
                return
            # No lock, and this order: a deadline check that reads the new start with
            # the old index finds it in time and looks again later; never the reverse.
            self.started = time.monotonic()
            self.index = index
            try:
                result = call(step.handler, argument)
            except BaseException as e:  # SystemExit in a handler is its failure, not ours
                self._settle(("failed", index, e))
                return
            if result is None:  # the usual answer: nothing to fold in
                continue
            if inspect.isawaitable(result):  # a plain function that returned a coroutine
                self._settle(("awaitable", index, result))
                return
            if self.abandoned:
                return
            try:
                stop = chain.accept(step.extension, result)
            except BaseException as e:
                self._settle(("invalid", index, e))
                return
            if stop:
                self._settle(("stopped", index, None))
                return
            argument = chain.argument()
        if not self.abandoned:
            self._settle(("done", len(self.steps) - 1, None))

    def _settle(self, outcome: Outcome, *, on_loop: bool = False) -> bool:
        """Set the outcome unless it is set already; wake whoever waits."""
        with self._guard:
            if self.outcome is not None:
                return False
            self.outcome = outcome
            self.abandoned = outcome[0] == "late"
            future = self.future
        self._finished.release()
        if future is not None:
            if on_loop:
                _resolve(future, outcome)
            else:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    self.loop.call_soon_threadsafe(_resolve, future, outcome)
        return True

    # -- on the event loop ---------------------------------------------------------

    def wait_briefly(self, seconds: float) -> Outcome | None:
        """The outcome, if the job ends within `seconds` (the loop waits in place)."""
        if self._finished.acquire(timeout=seconds):
            self._finished.release()
            return self.outcome
        return None

    def waited_future(self) -> asyncio.Future[Outcome]:
        """A future for the outcome, to wait through the loop."""
        with self._guard:
            if self.future is None:
                self.future = self.loop.create_future()
                if self.outcome is not None:
                    self.future.set_result(self.outcome)
            return self.future

    def late_by(self, timeout: float) -> float | None:
        """Seconds the running handler is past its deadline (negative: time left);
        None while the job waits in the queue behind another."""
        started = self.started
        return None if started is None else time.monotonic() - (started + timeout)

    def declare_late(self) -> bool:
        """At its deadline: the job is late, unless it just finished."""
        return self._settle(("late", self.index, None), on_loop=True)

    def abandon(self) -> None:
        """Nobody wants the outcome any more (the run was cancelled): stop between
        handlers."""
        with self._guard:
            self.abandoned = True


def _resolve(future: asyncio.Future[Outcome], outcome: Outcome) -> None:
    if not future.done():
        future.set_result(outcome)


class HandlerThread:
    """One daemon thread running jobs in order until it is retired.

    Jobs wait in a queue; the thread sleeps on a pipe and is woken by a byte written to
    it (issue 21, round 4). `os.write` lets go of the GIL for its system call, so the
    woken thread finds the GIL free and runs at once. Woken through the queue's own
    lock instead, it woke while the loop still held the GIL, slept again until the loop
    let go of it, and only then ran: a bare trip cost 10-15 µs of CPU against 3-5 µs this
    way, and a turn makes three."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[PlainJob | None] = queue.SimpleQueue()
        wake_up, self._bell = os.pipe()
        # never blocks the loop: a full pipe holds wake-ups enough for the thread
        os.set_blocking(self._bell, False)
        self._bell_guard = threading.Lock()  # a closed descriptor's number is reused
        self._rung_off = False
        self.thread = threading.Thread(
            target=self._serve, args=(wake_up,), name="assemble-extension-handlers", daemon=True
        )
        self.thread.start()

    def send(self, jobs: Sequence[PlainJob]) -> None:
        """Queue `jobs`, in order, and wake the thread once for them all (a wake-up is
        most of what a trip costs)."""
        for job in jobs:
            self.jobs.put(job)
        self._ring()

    def _ring(self) -> None:
        with self._bell_guard:
            if self._rung_off:
                return
            try:
                os.write(self._bell, b"\0")
            except BlockingIOError:  # full of wake-ups not read yet: the thread will look
                return

    def _serve(self, wake_up: int) -> None:
        try:
            while True:
                # Every job is queued before its wake-up is written, and the queue is
                # emptied after each wake-up: none is left waiting unseen.
                ended = not os.read(wake_up, 512)  # the bell was closed: nothing more comes
                while True:
                    try:
                        job = self.jobs.get_nowait()
                    except queue.Empty:
                        break
                    if job is None:  # retired
                        return
                    job.run()
                    # not kept while waiting for the next: what the job holds (the copy
                    # of the conversation a context chain gave its handlers) is then
                    # held only by its owner, which may reuse it
                    # (`extensions.context_copy`)
                    del job
                if ended:
                    return
        finally:
            os.close(wake_up)

    def retire(self) -> list[PlainJob]:
        """Stop taking jobs; the jobs still queued, for another thread."""
        waiting: list[PlainJob] = []
        with contextlib.suppress(queue.Empty):
            while True:
                job = self.jobs.get_nowait()
                if job is not None:
                    waiting.append(job)
        self.jobs.put(None)
        self._ring()
        with self._bell_guard:
            if not self._rung_off:
                self._rung_off = True
                os.close(self._bell)
        return waiting


def watch_deadline(job: PlainJob, timeout: float, on_late: Callable[[PlainJob], None]) -> Any:
    """Check `job` at its running handler's deadline, and again at each later one (a
    batch moves on to handlers with deadlines of their own; a queued job has not
    started its clock). `on_late` runs on the loop when the job is declared late.
    Returns a handle whose `cancel()` stops the watch."""
    watch = _Watch(job, timeout, on_late)
    watch.arm(timeout)
    return watch


class _Watch:
    def __init__(self, job: PlainJob, timeout: float, on_late: Callable[[PlainJob], None]) -> None:
        self.job = job
        self.timeout = timeout
        self.on_late = on_late
        self.timer: asyncio.TimerHandle | None = None

    def arm(self, delay: float) -> None:
        self.timer = self.job.loop.call_later(delay, self.check)

    def check(self) -> None:
        if self.job.outcome is not None:
            return
        late_by = self.job.late_by(self.timeout)
        if late_by is None:
            self.arm(self.timeout)
        elif late_by < 0:
            self.arm(-late_by)
        elif self.job.declare_late():
            self.on_late(self.job)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
