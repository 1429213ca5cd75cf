"""A command supervisor: runs one command at a time and answers for everything it starts.

Forked by the long-lived `process_supervisor` (standard library only, plus the sandbox
modules, which are too), and reused for the next command of the same sandbox once
everything the previous one started is gone: forking a Python process costs a few
milliseconds of copied memory, which is most of what a command used to cost. For
each command it:

- is a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): whatever the command starts,
  with `setsid`, a double fork or `nohup`, is reparented to it when its parent exits,
  never to init; so "every descendant" is simply "every process below this command
  supervisor", and it can kill them all;
- confines itself with the command's sandbox before the first command
  (`assembler.sandbox.confine`), so the command and everything it starts inherit it,
  and starts the command with `vfork` and `exec` (no Python runs in the child);
- outlives the assembler's death by no more than it takes to kill the tree: the
  control pipe's other end is held by the assembler only, and end-of-file on it (the
  assembler exited, crashed, or was killed with SIGKILL) means "kill everything".

It is not dumpable (`PR_SET_DUMPABLE` 0): a command cannot ptrace or read the memory of
the process that supervises it.

Per-command protocol (pipes sent with the request). Control, read: `kill` (stop every
descendant), or end-of-file (the same). Status, written: `pid <pid>` once the command
started, `exit <code>` or `signal <number>` when it ended, `error <text>` if it could
not start (the sandbox could not be set up, the directory is gone), `done` once every
process it started is gone; then the status pipe closes. After the command exits
the command supervisor stays while descendants remain (a server started with `cmd >
log 2>&1 &`), and only then takes the next command.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from assembler.sandbox.confine import ConfineError, enter, prepare
from assembler.sandbox.policy import Policy

#: `prctl` options (linux/prctl.h).
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
#: Seconds between SIGTERM and SIGKILL for the command's processes.
KILL_GRACE = 1.0
#: Seconds between checks while a command runs (besides its status and signals).
POLL = 0.5
#: Seconds a confined command supervisor is reused after it built its sandbox: its
#: Landlock rules list the entries of directories around hidden paths as they were.
REUSE_CONFINED = 60.0
#: The largest request (JSON with the command's environment).
MAX_REQUEST = 1 << 18
FDS_PER_REQUEST = 3  # control (read), status (write), output (write)
_ROUNDS = 200  # SIGKILL rounds before giving up on a tree that keeps forking

libc = ctypes.CDLL(None, use_errno=True)


class _Stop(Exception):
    """The command must be stopped with everything it started (a signal, `kill`, or
    end-of-file on the control pipe). Raised once per command: a second signal must
    not interrupt the kill."""

    raised = False


def _stop() -> None:
    if not _Stop.raised:
        _Stop.raised = True
        raise _Stop


def _on_signal(signum: int, frame: object) -> None:
    _stop()


def become_subreaper() -> bool:
    """Make orphaned descendants our children (Linux only); whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def descendants(root: int) -> list[int]:
    """Pids of every live process below `root`, found through /proc parent links."""
    children = children_by_parent()
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def children_by_parent() -> dict[int, list[int]]:
    """Live (not zombie) processes by parent pid, from /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return children
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def reap(command_pid: int, report: list[str]) -> bool:
    """Collect every exited child; note the command's status. Whether any remain."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == command_pid:
            if os.WIFSIGNALED(status):
                report.append(f"signal {os.WTERMSIG(status)}")
            else:
                report.append(f"exit {os.waitstatus_to_exitcode(status)}")


def kill_tree(command_pid: int, pgid: int | None, report: list[str]) -> None:
    """SIGTERM every descendant, give them `KILL_GRACE`, then SIGKILL until none is left.

    `pgid`: the command's process group, signalled too where descendants cannot be
    found through /proc and the subreaper (None where they can: once the command has
    been reaped its pid may be reused, and a process group is only a hint anyway).
    """
    me = os.getpid()
    targets = descendants(me)
    _signal_all(targets, pgid, signal.SIGTERM)
    _signal_all(targets, pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    deadline = time.monotonic() + KILL_GRACE
    while reap(command_pid, report) and time.monotonic() < deadline:
        if not descendants(me):
            break
        time.sleep(0.01)
    for _ in range(_ROUNDS):
        if not reap(command_pid, report):
            return
        _signal_all(descendants(me), pgid, signal.SIGKILL)
        time.sleep(0.005)


def _signal_all(pids: list[int], pgid: int | None, sig: signal.Signals) -> None:
    if pgid is not None:  # without /proc and a subreaper, the group is all we can find
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def spawn(argv: list[str], cwd: str, env: Mapping[str, str], output_fd: int) -> int:
    """Start the command in a session of its own, in `cwd`, output to `output_fd`, no
    stdin. `vfork` and `exec` in C (`subprocess`): no Python runs in the child, which
    inherits this process's sandbox, and nothing of this process is copied."""
    child = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=output_fd,
        stderr=output_fd,
        start_new_session=True,
        close_fds=True,
        restore_signals=True,
    )
    child.returncode = 0  # reaped by `reap`, never by the Popen object
    return child.pid


def _write(fd: int, line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, (line + "\n").encode())


def _read_line(fd: int, pending: bytearray) -> str | None:
    """The next line from `fd` (blocking); None at end-of-file."""
    while b"\n" not in pending:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line.decode("utf-8", "replace")


class Worker:
    """A command supervisor, from its fork to its exit."""

    def __init__(self) -> None:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        self.subreaper = become_subreaper()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, _on_signal)
        self.wake, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        self.key: str | None = None  # the sandbox it took on with its first command
        self.confined_at = 0.0
        self.link: socket.socket | None = None  # to the long-lived supervisor
        self.reusable: bool | None = None  # said `idle` (True) or may not (False)

    def warm(self) -> None:
        """Run the code a command needs once before one comes: a forked process pays
        for each page of its parent's it touches first (copy on write), so a spare
        pays that while it waits, not while a command does."""
        json.loads(b'{"argv": ["true"], "cwd": "/", "env": {"PATH": "/usr/bin:/bin"}}')
        sink = os.open(os.devnull, os.O_WRONLY)
        try:
            os.waitpid(spawn(["true"], "/", {"PATH": "/usr/bin:/bin"}, sink), 0)
            prepare(Policy("read-only", "off", hidden=("/nonexistent",), devices=())).close()
        except (OSError, ConfineError):
            pass
        finally:
            os.close(sink)

    def serve(self, link: socket.socket) -> int:
        """Run the commands `link` brings, one at a time, saying `idle` after each;
        return at end-of-file, or when it may not be reused any more."""
        try:
            while True:
                try:
                    data, fds, _, _ = socket.recv_fds(link, MAX_REQUEST, FDS_PER_REQUEST + 1)
                except OSError:
                    return 0
                if data and not fds:  # take a sandbox on ahead of its first command
                    if not self.prepare(data) or not self._idle(link):
                        return 0
                elif len(fds) != FDS_PER_REQUEST:  # end-of-file: the long-lived one is gone
                    for fd in fds:
                        os.close(fd)
                    return 0
                elif not self.run(data, *fds, link=link):
                    return 0
        except _Stop:  # told to stop between commands: nothing runs, just exit
            return 0

    def _idle(self, link: socket.socket) -> bool:
        """Tell the long-lived supervisor this one takes another command, unless it
        may not be reused any more; whether it may."""
        if self.key and time.monotonic() - self.confined_at > REUSE_CONFINED:
            return False
        try:
            link.send(b"idle")
        except OSError:
            return False
        return True

    def prepare(self, data: bytes) -> bool:
        """Confine this process for the request's sandbox before any command comes,
        so an agent's first command does not wait for it; whether it can go on (a
        sandbox that cannot be had is reported by the first command instead)."""
        try:
            self._confine(json.loads(data))
        except (ConfineError, OSError, ValueError):
            return False
        return True

    def run(
        self, data: bytes, control: int, status: int, output: int, *, link: socket.socket
    ) -> bool:
        """One command, start to finish; every descendant is gone when it returns.
        `idle` goes to the long-lived supervisor before the status pipe closes, so
        the next command of the same sandbox, sent once the assembler sees the end,
        finds this one free. Whether it may take another."""
        _Stop.raised = False
        self.link, self.reusable = link, None
        try:
            self._run(data, control, status, output)
        finally:
            reusable = self._free()
            for fd in (control, status):
                with contextlib.suppress(OSError):
                    os.close(fd)
        return reusable

    def _free(self) -> bool:
        """Say `idle` once per command (see `_idle`); whether this one may be reused.

        Said before the last status lines are written: the bash tool returns at the
        command's `exit`, and the agent's next command must find this one free."""
        if self.reusable is None:
            self.reusable = self._idle(self.link) if self.link is not None else False
        return self.reusable

    def _run(self, data: bytes, control: int, status: int, output: int) -> None:
        report: list[str] = []
        pending = bytearray()
        command_pid = 0
        try:
            try:
                request: dict[str, Any] = json.loads(data)
                self._confine(request)
                command_pid = spawn(
                    [str(arg) for arg in request["argv"]],
                    str(request.get("cwd") or "/"),
                    {str(k): str(v) for k, v in dict(request.get("env", {})).items()},
                    output,
                )
            except OSError as exc:
                raise OSError(f"cannot run the command: {exc}") from exc
            finally:
                os.close(output)  # only the command's processes may keep the output open
            _write(status, f"pid {command_pid}" + ("" if self.subreaper else " no-subreaper"))
            while True:
                remaining = reap(command_pid, report)
                if not remaining:
                    self._free()
                while report:
                    _write(status, report.pop(0))
                if not remaining:
                    break
                ready, _, _ = select.select([control, self.wake], [], [], POLL)
                if self.wake in ready:
                    with contextlib.suppress(OSError):
                        os.read(self.wake, 512)
                if control in ready:
                    line = _read_line(control, pending)
                    if line is None or line.strip() == "kill":
                        _stop()
        except _Stop:
            if command_pid:
                kill_tree(command_pid, None if self.subreaper else command_pid, report)
            self._free()
            while report:
                _write(status, report.pop(0))
        except (ConfineError, OSError, ValueError, KeyError) as exc:
            self._free()
            _write(status, "error " + " ".join(str(exc).split()))
            return
        _write(status, "done")

    def _confine(self, request: Mapping[str, Any]) -> None:
        """Take on the request's sandbox (once: a confined process cannot widen)."""
        key = str(request.get("key", ""))
        if self.key is None:
            policy = request.get("policy")
            if policy:
                enter(prepare(Policy.from_dict(policy)))
                self.confined_at = time.monotonic()
            self.key = key
        elif key != self.key:
            raise ConfineError("this command supervisor runs another sandbox's commands")
