"""Subprocesses of tools that cannot outlive their call, or the assembler.

Two kinds: a `bash` command runs under its own small supervisor process
(`process_supervisor.py`, a child subreaper that can reach every descendant, however
detached), and a search worker (`search_worker.py`) is one plain process. Both are
listed in `RUNNING` while they live, so `stop_all()` can end every tool process at
once: at interpreter exit, and from the handlers `install_exit_handlers()` puts on
SIGTERM and SIGHUP for the CLI. If the assembler dies without running any of that
(SIGKILL, a crash), each supervisor sees end-of-file on its stdin, kills its tree and
exits; a search worker is killed by the kernel (`PR_SET_PDEATHSIG`, set by itself).

The registry is process-wide on purpose: signals and process exit are process-wide,
and the processes in it belong to calls in flight (or to background jobs a finished
call left running), not to any one agent's configuration.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from assembler.errors import ToolError

SUPERVISOR = Path(__file__).with_name("process_supervisor.py")
#: Seconds the supervisor gives a command between SIGTERM and SIGKILL (its KILL_GRACE).
KILL_GRACE = 1.0
#: Seconds to wait, after asking, for a supervisor to report its tree gone.
STOP_WAIT = KILL_GRACE + 4.0
#: Seconds a graceful exit after SIGTERM/SIGHUP may take before the process just ends.
EXIT_DEADLINE = 8.0


class ProcessRegistry:
    """Every live tool process, by pid, with the function that stops it."""

    def __init__(self) -> None:
        self._stops: dict[int, Callable[[], None]] = {}
        self._lock = threading.Lock()

    def add(self, pid: int, stop: Callable[[], None]) -> None:
        with self._lock:
            self._stops[pid] = stop

    def discard(self, pid: int) -> None:
        with self._lock:
            self._stops.pop(pid, None)

    def pids(self) -> list[int]:
        with self._lock:
            return list(self._stops)

    def stop_all(self) -> None:
        """Ask every process to stop (never raises, never blocks on a process)."""
        with self._lock:
            stops = list(self._stops.values())
        for stop in stops:
            with contextlib.suppress(Exception):
                stop()


RUNNING = ProcessRegistry()
_lingering: dict[int, subprocess.Popen[bytes]] = {}


def stop_all(wait: float = 0.0) -> None:
    """Stop every tool process; with `wait`, give supervisors that long to finish."""
    RUNNING.stop_all()
    if wait <= 0:
        return
    for popen in list(_lingering.values()):
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            popen.wait(timeout=wait)


@dataclass
class Supervised:
    """One command under its supervisor: status lines in, `kill` out."""

    popen: subprocess.Popen[bytes]
    status: asyncio.StreamReader
    transport: asyncio.ReadTransport
    command_pid: int | None = None
    outcome: str | None = None  # `exit N` / `signal N` once the command ended
    lines: list[str] = field(default_factory=list)

    def kill(self) -> None:
        """Ask the supervisor to stop the whole tree (one non-blocking write)."""
        _send_kill(self.popen)

    async def read_status(self) -> str | None:
        """The next status line; None once the supervisor has exited."""
        raw = await self.status.readline()
        if not raw:
            return None
        line = raw.decode("utf-8", "replace").strip()
        self.lines.append(line)
        word, _, rest = line.partition(" ")
        if word == "pid":
            self.command_pid = int(rest.split()[0])
        elif word in ("exit", "signal"):
            self.outcome = line
        elif word == "error":
            raise ToolError(f"the command could not be started: {rest}")
        return line

    async def wait_outcome(self) -> None:
        """Until the command itself has ended (the supervisor may stay for its jobs)."""
        while self.outcome is None:
            if await self.read_status() is None:
                self._supervisor_lost()
                return

    async def wait_done(self) -> None:
        """Until the supervisor has exited, having stopped everything below it."""
        while await self.read_status() is not None:
            pass

    def exit_code(self) -> int | None:
        """The command's exit code, negative for a signal, as `Popen.returncode`."""
        if self.outcome is None:
            return None
        word, _, number = self.outcome.partition(" ")
        return -int(number) if word == "signal" else int(number)

    def release(self) -> None:
        """Stop reading. The supervisor stays registered while it lives (background
        jobs the command left running); it is reaped by a later `sweep`."""
        self.transport.close()
        if self.popen.poll() is not None:
            _forget(self.popen)

    def _supervisor_lost(self) -> None:
        """The supervisor died without a report (killed from outside): fall back to
        killing the command's process group, the best that is left."""
        if self.command_pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.command_pid, signal.SIGKILL)
        self.outcome = "signal 9"


async def start_supervised(
    argv: list[str], *, cwd: str, env: Mapping[str, str], output_fd: int
) -> Supervised:
    """Start `argv` under a new supervisor, its output going to `output_fd`."""
    sweep()
    popen = subprocess.Popen(
        [sys.executable, "-I", "-S", str(SUPERVISOR)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=dict(env),
        pass_fds=(output_fd,),
        start_new_session=True,  # the terminal's Ctrl-C goes to the assembler only
    )
    assert popen.stdin is not None and popen.stdout is not None
    _lingering[popen.pid] = popen
    RUNNING.add(popen.pid, lambda: _send_kill(popen))
    request = json.dumps({"argv": argv, "output_fd": output_fd}) + "\n"
    try:
        os.write(popen.stdin.fileno(), request.encode())
        os.set_blocking(popen.stdin.fileno(), False)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), popen.stdout
        )
    except BaseException:
        _send_kill(popen)
        raise
    return Supervised(popen, reader, transport)


def sweep() -> None:
    """Forget supervisors that have exited (and reap them)."""
    for popen in list(_lingering.values()):
        if popen.poll() is not None:
            _forget(popen)


def _forget(popen: subprocess.Popen[bytes]) -> None:
    _lingering.pop(popen.pid, None)
    RUNNING.discard(popen.pid)
    if popen.stdin is not None:
        with contextlib.suppress(OSError):
            popen.stdin.close()


def _send_kill(popen: subprocess.Popen[bytes]) -> None:
    stdin = popen.stdin
    if stdin is None or stdin.closed:
        return
    with contextlib.suppress(OSError, ValueError):
        os.write(stdin.fileno(), b"kill\n")


# --- the CLI's exit path ------------------------------------------------------------


@dataclass
class _ExitState:
    installed: bool = False
    exiting: bool = False


_EXIT = _ExitState()


def install_exit_handlers() -> None:
    """For the CLI: SIGTERM and SIGHUP stop every tool process, then exit.

    The first signal stops the tool processes at once, then raises `SystemExit(128 +
    signal)` so the run unwinds (session and trace closed, servers stopped); if that
    takes longer than `EXIT_DEADLINE` seconds, or a second signal comes, the process
    ends without waiting. Interpreter exit (Ctrl-C twice included) also stops them.
    Call it from the main thread, before the event loop starts; it installs once,
    and leaves alone a signal that already has a handler of someone else's.
    """
    if _EXIT.installed or threading.current_thread() is not threading.main_thread():
        return
    _EXIT.installed = True
    atexit.register(stop_all, STOP_WAIT)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _on_exit_signal)


def _on_exit_signal(signum: int, frame: FrameType | None) -> None:
    code = 128 + signum
    stop_all()
    if _EXIT.exiting:
        os._exit(code)
    _EXIT.exiting = True
    timer = threading.Timer(EXIT_DEADLINE, _hard_exit, (code,))
    timer.daemon = True
    timer.start()
    raise SystemExit(code)


def _hard_exit(code: int) -> None:
    stop_all(STOP_WAIT)
    os._exit(code)
