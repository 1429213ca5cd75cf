"""The handler thread's wake-ups (issue 21, round 4): jobs are queued and the thread is
woken by a byte written to a pipe. Nothing the loop sends may block on that pipe, no
job may be left unseen, and a retired thread gives its descriptors back.

Real threads, real pipes; `HandlerThread` directly.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from handler_chains import Collect

from assembler.extensions.handler_thread import HandlerThread, PlainJob


class Step:
    def __init__(self, handler: Any) -> None:
        self.extension = "e"
        self.handler = handler


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ"), reason="pipe size is Linux's")
def test_more_wake_ups_than_the_pipe_holds_never_block_and_every_job_runs_in_order() -> None:
    """The thread is held by a handler while the loop sends more jobs, each with its
    wake-up, than the (shrunk) pipe can hold: sending never blocks, and once the
    handler returns every job runs, in the order sent."""
    loop = asyncio.new_event_loop()
    release = threading.Event()
    ran: list[int] = []
    thread = HandlerThread()
    fcntl.fcntl(thread._bell, fcntl.F_SETPIPE_SZ, 4096)  # one page: 4,096 wake-ups
    first = PlainJob([Step(lambda e: release.wait(60))], Collect(), loop)
    thread.send([first])
    jobs = [PlainJob([Step(lambda e, n=n: ran.append(n))], Collect(), loop) for n in range(6000)]

    def send_each() -> None:
        for job in jobs:
            thread.send([job])

    sender = threading.Thread(target=send_each)
    sender.start()
    sender.join(5)
    blocked = sender.is_alive()
    release.set()
    sender.join()
    assert not blocked  # a full pipe means the thread has wake-ups enough already
    assert jobs[-1].wait_briefly(10) == ("done", 0, None)
    assert first.outcome == ("done", 0, None)
    assert ran == list(range(6000))
    thread.retire()
    thread.thread.join(5)
    assert not thread.thread.is_alive()
    loop.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="open descriptors from /proc")
def test_a_retired_thread_ends_and_gives_its_descriptors_back() -> None:
    before = open_descriptors()
    loop = asyncio.new_event_loop()
    thread = HandlerThread()
    job = PlainJob([Step(lambda e: "answer")], Collect(), loop)
    thread.send([job])
    assert job.wait_briefly(10) == ("done", 0, None)
    assert thread.retire() == []
    thread.thread.join(5)
    assert not thread.thread.is_alive()
    loop.close()
    assert open_descriptors() <= before


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="open descriptors from /proc")
def test_a_retired_thread_never_writes_to_a_descriptor_reused_after_it() -> None:
    """Retired once, its write end is closed and its number free for the next file
    opened; a second retirement (a finalizer after `reap`) writes nothing there."""
    thread = HandlerThread()
    thread.retire()
    thread.thread.join(5)
    reader, writer = os.pipe()  # likely the numbers the thread's pipe had
    try:
        os.set_blocking(reader, False)
        assert thread.retire() == []
        thread.send([])  # a late send after retirement: nothing rings either
        with pytest.raises(BlockingIOError):
            os.read(reader, 1)
    finally:
        os.close(reader)
        os.close(writer)


def test_jobs_queued_behind_a_handler_that_is_left_move_to_a_new_thread() -> None:
    """A late job's thread is retired while it still runs a handler; the jobs queued
    behind it are handed back and run by another thread, and the first thread ends
    once its handler returns."""
    loop = asyncio.new_event_loop()
    release = threading.Event()
    old = HandlerThread()
    stuck = PlainJob([Step(lambda e: release.wait(10))], Collect(), loop)
    ran_in: list[threading.Thread] = []
    behind = PlainJob([Step(lambda e: ran_in.append(threading.current_thread()))], Collect(), loop)
    old.send([stuck, behind])
    while stuck.started is None:
        threading.Event().wait(0.001)
    waiting = old.retire()
    assert waiting == [behind]
    new = HandlerThread()
    new.send(waiting)
    assert behind.wait_briefly(10) == ("done", 0, None)
    assert ran_in == [new.thread]
    assert stuck.outcome is None  # still running in the old thread
    release.set()
    assert stuck.wait_briefly(10) == ("done", 0, None)
    old.thread.join(5)
    assert not old.thread.is_alive()
    new.retire()
    new.thread.join(5)
    loop.close()
