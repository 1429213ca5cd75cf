"""Search workers kept between calls: one started process answers many searches.

Starting a worker is starting a Python interpreter (about 25 ms of CPU); a search of a
small tree takes well under a millisecond. So a worker that answered is kept for the
next call, and a call costs one request and one answer on its pipes. What
`search_worker` guarantees still holds for every call:

- A search ends at the tool timeout: a worker that is late, or whose call was
  cancelled, is killed (it may be deep in a backtracking regular expression) and
  never used again; the next call starts a new one. So does a worker that failed.
- No worker outlives the assembler: each is listed in `processes.RUNNING` while it
  lives (the CLI's exit path kills them), is killed by the kernel when the thread
  that started it ends (`PR_SET_PDEATHSIG`), and exits at end-of-file on its stdin,
  a pipe only this process holds. An idle worker found dead (its starting thread
  ended) is replaced.

Concurrent calls each take a worker of their own (a worker serves one call at a
time); at most `MAX_IDLE` wait between calls. Workers belong to the process, not to
an agent: they hold no state between searches, and every request names its own
root. A forked child starts its own.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import ToolError
from assembler.tools.environment import base_environment
from assembler.tools.processes import RUNNING

if TYPE_CHECKING:
    import asyncio

#: Idle workers kept for later calls; more concurrent calls start more, then close them.
MAX_IDLE = 4
#: Seconds to wait for a killed worker to be gone before leaving it to a later sweep.
REAP_WAIT = 2.0
#: Where the `assembler` package can be imported from, for the worker process.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # assembler/tools/builtin/..
#: The worker's command line: only the standard library and this package importable
#: (the package root is appended to the path, so it cannot shadow the stdlib); the
#: second argument is this process's pid.
WORKER_BOOT = (
    "import sys; sys.path.append(sys.argv[1]); "
    f"from {__package__}.search_worker import main; main()"
)


class SearchWorker:
    """One worker process and the bytes of an answer it is writing."""

    def __init__(self) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WORKER_BOOT, _PACKAGE_ROOT, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # it answers its failures on stdout
            env=base_environment(os.environ),
            start_new_session=True,  # the terminal's Ctrl-C goes to the assembler only
        )
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.pid = self.popen.pid
        self._in = self.popen.stdin.fileno()
        self._out = self.popen.stdout.fileno()
        os.set_blocking(self._out, False)
        self.answers = 0
        RUNNING.add(self.pid, self.kill)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL (never raises; may run from a signal handler)."""
        if self.popen.returncode is None:
            with contextlib.suppress(OSError):
                self.popen.kill()

    async def ask(self, loop: asyncio.AbstractEventLoop, payload: bytes) -> bytes | None:
        """Send one request line; its answer line, or None if the worker ended first."""
        answer: asyncio.Future[bytes | None] = loop.create_future()
        chunks: list[bytes] = []

        def readable() -> None:
            try:
                chunk = os.read(self._out, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if answer.done():
                return
            if not chunk:
                answer.set_result(None)
                return
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                answer.set_result(b"".join(chunks))

        try:
            os.write(self._in, payload)  # a small request into an idle worker's pipe
        except OSError:  # BrokenPipeError: it is gone
            return None
        loop.add_reader(self._out, readable)
        try:
            return await answer
        finally:
            loop.remove_reader(self._out)

    async def stop(self) -> bool:
        """Kill it and wait (briefly, without blocking the loop) until it is gone;
        False if it is still there after `REAP_WAIT` seconds."""
        import asyncio

        self.kill()
        deadline = time.monotonic() + REAP_WAIT
        while self.popen.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        self.close()
        return self.popen.returncode is not None

    def close(self) -> None:
        """Close our ends of its pipes; forget it once it has exited."""
        for pipe in (self.popen.stdin, self.popen.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        if self.popen.poll() is not None:
            RUNNING.discard(self.pid)

    def exit_description(self) -> str:
        code = self.popen.poll()
        if code is None:
            return "the search worker stopped answering"
        if code < 0:
            return f"the search worker was killed by signal {-code}"
        return f"the search worker exited with code {code}"


class SearchWorkers:
    """The process's search workers: idle ones waiting, and how many were started."""

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self.max_idle = max_idle
        self.started = 0
        self._idle: list[SearchWorker] = []
        self._lingering: list[SearchWorker] = []  # killed, not yet seen gone
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._at_exit = False

    def idle_pids(self) -> list[int]:
        with self._lock:
            return [worker.pid for worker in self._idle]

    async def ask(self, request: dict[str, Any], timeout: float, what: str) -> dict[str, Any]:
        """`request` answered by a worker within `timeout` seconds; `TimeoutError` when
        it was not (the worker killed), `ToolError` when the worker failed. The answer's
        own `error` is the caller's to report."""
        import asyncio

        loop = asyncio.get_running_loop()
        payload = json.dumps(request).encode() + b"\n"
        deadline = loop.time() + timeout
        while True:
            worker, reused = self._take()
            line: bytes | None = None
            try:
                async with asyncio.timeout_at(deadline):
                    line = await worker.ask(loop, payload)
            except TimeoutError:
                await self._stop(worker)
                raise TimeoutError(f"{what} did not finish within {timeout:g} s") from None
            except BaseException:  # cancelled: the search must not outlive the call
                await self._stop(worker)
                raise
            if line is None:
                await self._stop(worker)
                code, died = worker.popen.returncode, worker.exit_description()
                if reused and (code is None or code < 0) and loop.time() < deadline:
                    continue  # an idle worker lost to a signal (or its thread): start another
                raise ToolError(f"{what} failed: {died}")
            answer: dict[str, Any] = json.loads(line)
            if "failed" in answer:
                await self._stop(worker)
                raise ToolError(f"{what} failed: {answer['failed']}")
            worker.answers += 1
            self._give_back(worker)
            return answer

    def _take(self) -> tuple[SearchWorker, bool]:
        """An idle worker still alive (reused), or a new one."""
        with self._lock:
            self._check_fork()
            self._sweep()
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker, True
                worker.close()
            if not self._at_exit:
                atexit.register(self.close)
                self._at_exit = True
            self.started += 1
        return SearchWorker(), False

    async def _stop(self, worker: SearchWorker) -> None:
        if not await worker.stop():
            with self._lock:
                self._lingering.append(worker)

    def _give_back(self, worker: SearchWorker) -> None:
        with self._lock:
            if os.getpid() == self._pid and len(self._idle) < self.max_idle:
                self._idle.append(worker)
                return
        worker.kill()
        worker.close()
        with self._lock:
            self._lingering.append(worker)

    def _check_fork(self) -> None:
        """In a forked child the idle workers are the parent's: forget them."""
        if os.getpid() != self._pid:
            self._idle, self._lingering, self._pid = [], [], os.getpid()

    def _sweep(self) -> None:
        still = []
        for worker in self._lingering:
            if worker.alive():
                still.append(worker)
            else:
                worker.close()
        self._lingering = still

    def close(self) -> None:
        """Kill every idle worker and wait for them (at exit, and for tests)."""
        with self._lock:
            if os.getpid() != self._pid:
                return
            workers, self._idle = self._idle + self._lingering, []
            self._lingering = []
        for worker in workers:
            worker.kill()
        for worker in workers:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                worker.popen.wait(timeout=REAP_WAIT)
            worker.close()


WORKERS = SearchWorkers()
