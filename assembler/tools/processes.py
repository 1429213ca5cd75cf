"""Subprocesses of tools that cannot outlive their call, their agent, or the assembler.

Two kinds: a `bash` command runs under a command supervisor of its own (forked by the
one long-lived `process_supervisor.py` of this process, `supervisor_client`), a child
subreaper that can reach every descendant, however detached; and a search worker
(`search_worker.py`) is one plain process. Both are listed in `RUNNING` while they
live, so `stop_all()` can end every tool process at once: at interpreter exit, and
from the handlers `install_exit_handlers()` puts on SIGTERM and SIGHUP for the CLI.
If the assembler dies without running any of that (SIGKILL, a crash), each command
supervisor sees end-of-file on its control pipe, kills its tree and exits; a search
worker is killed by the kernel (`PR_SET_PDEATHSIG`, set by itself).

A command may leave background jobs running after its call (`server > log 2>&1 &`);
they belong to a `ProcessScope`, one per agent, and closing the agent stops them
(`ProcessScope.aclose`), so an evaluation's checks never race a job the run left.

The registry is process-wide on purpose: signals and process exit are process-wide,
and the processes in it belong to calls in flight (or to background jobs a finished
call left running), not to any one agent's configuration.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from assembler.errors import ToolError
from assembler.tools.supervisor_client import HOST, SUPERVISOR, at_end, wait_closed

__all__ = [
    "EXIT_DEADLINE",
    "KILL_GRACE",
    "RUNNING",
    "STOP_WAIT",
    "SUPERVISOR",
    "ProcessRegistry",
    "ProcessScope",
    "Supervised",
    "install_exit_handlers",
    "prepare_sandbox",
    "start_supervised",
    "stop_all",
    "sweep",
]

#: Seconds the supervisor gives a command between SIGTERM and SIGKILL (its KILL_GRACE).
KILL_GRACE = 1.0
#: Seconds to wait, after asking, for a supervisor to report its tree gone.
STOP_WAIT = KILL_GRACE + 4.0
#: Seconds a graceful exit after SIGTERM/SIGHUP may take before the process just ends.
EXIT_DEADLINE = 8.0


class ProcessRegistry:
    """Every live tool process, by id (a search worker's pid, a command's number),
    with the function that stops it."""

    def __init__(self) -> None:
        self._stops: dict[int, Callable[[], None]] = {}
        # Reentrant: the exit signal's handler (`stop_all`) runs on the main thread,
        # which the signal may have interrupted inside `add` or `discard`.
        self._lock = threading.RLock()

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


@dataclass
class _Command:
    """One command supervisor as this process knows it: the end of its control pipe
    we write to, and a status descriptor that reaches end-of-file when it exits."""

    key: int
    control: int
    watch: int
    released: bool = False
    scope: ProcessScope | None = None

    def kill(self) -> None:
        """Ask for the whole tree to stop (one non-blocking write)."""
        with contextlib.suppress(OSError):
            os.write(self.control, b"kill\n")

    def forget(self) -> None:
        """Drop the command and close its two descriptors, once: two runs sweeping at
        the same moment must not close a descriptor number twice, since the second
        close would hit whatever the process opened under that number in between."""
        with _lock:
            if _commands.pop(self.key, None) is None:
                return
            for fd in (self.control, self.watch):
                with contextlib.suppress(OSError):
                    os.close(fd)
        RUNNING.discard(self.key)
        if self.scope is not None:
            self.scope.discard(self)


_commands: dict[int, _Command] = {}
_numbers = itertools.count(1)
_lock = threading.Lock()


class ProcessScope:
    """The commands one agent started that may still run (background jobs included)."""

    def __init__(self) -> None:
        self._commands: dict[int, _Command] = {}
        self._lock = threading.Lock()

    def add(self, command: _Command) -> None:
        with self._lock:
            self._commands[command.key] = command

    def discard(self, command: _Command) -> None:
        with self._lock:
            self._commands.pop(command.key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._commands)

    async def aclose(self, wait: float = STOP_WAIT) -> None:
        """Stop every process this scope's commands started, and wait (up to `wait`
        seconds) until each command supervisor reports its tree gone."""
        with self._lock:
            commands = list(self._commands.values())
        for command in commands:
            command.kill()
        deadline = time.monotonic() + wait
        # A call still winding down (cancelled with its run) reads its own status; it
        # releases the command once the tree is gone, or gives up waiting.
        while any(not c.released for c in commands) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        watches = _watch_copies(c for c in commands if c.released)
        try:
            if watches:
                await asyncio.to_thread(wait_closed, watches, deadline)
        finally:
            _close_all(watches)
        sweep()


def stop_all(wait: float = 0.0) -> None:
    """Stop every tool process; with `wait`, give supervisors that long to finish."""
    RUNNING.stop_all()
    if wait <= 0:
        return
    with _lock:
        released = [c for c in _commands.values() if c.released]
    watches = _watch_copies(released)
    try:
        wait_closed(watches, time.monotonic() + wait)
    finally:
        _close_all(watches)
    sweep()


def _watch_copies(commands: Iterable[_Command]) -> list[int]:
    """Duplicates of the status descriptors of `commands` still registered, for a
    wait outside the lock: another run's `sweep` may forget (and close) a command
    while the wait runs, and a copy keeps the pipe open and its number ours until
    the wait is over."""
    copies = []
    with _lock:
        for command in commands:
            if command.key in _commands:
                with contextlib.suppress(OSError):
                    copies.append(os.dup(command.watch))  # shares its non-blocking mode
    return copies


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


@dataclass
class Supervised:
    """One command under its command supervisor: status lines in, `kill` out."""

    command: _Command
    status: asyncio.StreamReader
    transport: asyncio.ReadTransport
    command_pid: int | None = None
    outcome: str | None = None  # `exit N` / `signal N` once the command ended
    lines: list[str] = field(default_factory=list)

    def kill(self) -> None:
        """Ask the command supervisor to stop the whole tree (one non-blocking write)."""
        self.command.kill()

    async def read_status(self) -> str | None:
        """The next status line; None once the command supervisor has exited."""
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
                if self.command_pid is None:
                    raise ToolError(
                        "the command could not be started: the process supervisor did not "
                        "take it (it may have been killed)"
                    )
                self._supervisor_lost()
                return

    async def wait_done(self) -> None:
        """Until the command supervisor has exited, having stopped everything below it."""
        while await self.read_status() is not None:
            pass

    def exit_code(self) -> int | None:
        """The command's exit code, negative for a signal, as `Popen.returncode`."""
        if self.outcome is None:
            return None
        word, _, number = self.outcome.partition(" ")
        return -int(number) if word == "signal" else int(number)

    def release(self) -> None:
        """Stop reading. The command stays registered while its supervisor lives
        (background jobs the command left running); a later `sweep` forgets it."""
        self.transport.close()
        self.command.released = True
        if at_end(self.command.watch):
            self.command.forget()

    def _supervisor_lost(self) -> None:
        """The command supervisor died without a report (killed from outside): fall
        back to killing the command's process group, the best that is left."""
        if self.command_pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.command_pid, signal.SIGKILL)
        self.outcome = "signal 9"


async def start_supervised(
    argv: list[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    output_fd: int,
    policy: Mapping[str, Any] | None = None,
    scope: ProcessScope | None = None,
) -> Supervised:
    """Start `argv` in `cwd` under a command supervisor, its output going to
    `output_fd`, confined by the sandbox `policy` (`Policy.to_dict()`) when given."""
    sweep()
    control_read, control_write = os.pipe()
    status_read, status_write = os.pipe()
    key = json.dumps(policy, sort_keys=True) if policy else ""
    request = {"argv": argv, "cwd": cwd, "env": dict(env), "policy": policy, "key": key}
    try:
        if HOST.pid is None:  # starting it forks and execs Python: not on the event loop
            await asyncio.to_thread(HOST.start)
        HOST.submit(request, [control_read, status_write, output_fd])
    except BaseException:
        for fd in (control_write, status_read):
            os.close(fd)
        raise
    finally:
        os.close(control_read)
        os.close(status_write)
    os.set_blocking(control_write, False)
    watch = os.dup(status_read)
    os.set_blocking(watch, False)
    command = _Command(next(_numbers), control_write, watch, scope=scope)
    with _lock:
        _commands[command.key] = command
    RUNNING.add(command.key, command.kill)
    if scope is not None:
        scope.add(command)
    pipe = os.fdopen(status_read, "rb", buffering=0)
    try:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
    except BaseException:
        command.kill()
        command.released = True
        pipe.close()
        raise
    return Supervised(command, reader, transport)


def prepare_sandbox(policy: Mapping[str, Any]) -> None:
    """Have a command supervisor take `policy` (`Policy.to_dict()`) on now, so the
    agent's first command finds it confined (sent when an agent is built)."""
    key = json.dumps(policy, sort_keys=True)
    with contextlib.suppress(ToolError):
        HOST.submit({"key": key, "policy": policy}, [])


def sweep() -> None:
    """Forget command supervisors that have exited (their status reached its end)."""
    # Looked at under the lock: a descriptor another thread's sweep closed could
    # otherwise be read here after its number was reused for something else.
    with _lock:
        ended = [c for c in _commands.values() if c.released and at_end(c.watch)]
    for command in ended:
        command.forget()


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
    if _EXIT.exiting:
        stop_all()
        os._exit(code)
    _EXIT.exiting = True
    # The deadline is set before anything else runs: whatever hangs from here on,
    # the process still ends.
    timer = threading.Timer(EXIT_DEADLINE, _hard_exit, (code,))
    timer.daemon = True
    timer.start()
    stop_all()
    raise SystemExit(code)


def _hard_exit(code: int) -> None:
    """End the process after at most `STOP_WAIT` more seconds of stopping the tool
    processes, even if stopping them is itself held up."""
    stopping = threading.Thread(target=stop_all, args=(STOP_WAIT,), daemon=True)
    stopping.start()
    stopping.join(STOP_WAIT + 1.0)
    os._exit(code)
