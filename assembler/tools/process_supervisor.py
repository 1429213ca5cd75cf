"""The small process that runs one `bash` command and answers for all it starts.

Run as a script (`python -I -S process_supervisor.py`) by `assembler.tools.processes`,
never imported by the assembler itself: standard library only, so it starts in a
few milliseconds. Why a process of its own, and not the assembler's:

- It makes itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`). Whatever the
  command starts, with `setsid`, a double fork or `nohup`, is reparented to the
  supervisor when its parent exits, never to init; so "every descendant" is simply
  "every process below the supervisor", and it can kill them all. Making the
  assembler process a subreaper instead would hand it every orphan of every
  subprocess (MCP servers, Python tools, the host application embedding the SDK),
  which it would have to reap: a process-wide change for a per-command need.
- It outlives the assembler's death by no more than it takes to kill the tree:
  its stdin is a pipe only the assembler holds, and end-of-file on it (the
  assembler exited, crashed, or was killed with SIGKILL) means "kill everything and
  exit". It also checks that its parent is still the one that started it.

Protocol. stdin: one JSON line `{"argv": [...], "output_fd": N}`, then commands,
one per line: `kill` (stop every descendant, then exit). stdout: status lines,
`pid <pid>` once the command started, `exit <code>` or `signal <number>` when it
ended, `error <text>` if it could not start, `done` just before the supervisor exits.
After the command exits the supervisor stays while descendants remain (a server
started with `cmd > log 2>&1 &`), and exits when they are gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import time

#: `prctl` options (linux/prctl.h).
PR_SET_CHILD_SUBREAPER = 36
#: Seconds between SIGTERM and SIGKILL for the command's processes.
KILL_GRACE = 1.0
#: Seconds between checks that the parent is still alive (besides end-of-file).
PARENT_CHECK = 0.5
_ROUNDS = 200  # SIGKILL rounds before giving up on a tree that keeps forking


class _Stop(Exception):
    """The supervisor must stop the tree and exit (told by a signal, `kill`, or its
    parent's death). Raised once: a second signal must not interrupt the kill."""

    raised = False


def _stop() -> None:
    if not _Stop.raised:
        _Stop.raised = True
        raise _Stop


def become_subreaper() -> bool:
    """Make orphaned descendants our children (Linux only); whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Pids of every live process below `root`, found through /proc parent links."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
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
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


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


def spawn(argv: list[str], output_fd: int) -> int:
    """Start the command in a session of its own, output to `output_fd`, no stdin."""
    pid = os.fork()
    if pid != 0:
        return pid
    try:  # the child: never return into the supervisor's code
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.closerange(3, 65536)
        for sig in (signal.SIGPIPE, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)  # Python ignores SIGPIPE; commands must not
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.execvp(argv[0], argv)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"cannot run {argv[0]}: {exc}\n".encode())
    os._exit(127)


def _write(line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(1, (line + "\n").encode())


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


def _on_signal(signum: int, frame: object) -> None:
    _stop()


def main() -> int:
    parent = os.getppid()
    subreaper = become_subreaper()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    pending = bytearray()
    request_line = _read_line(0, pending)
    if request_line is None:
        return 0
    request = json.loads(request_line)
    argv = [str(arg) for arg in request["argv"]]
    output_fd = int(request["output_fd"])
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    report: list[str] = []
    command_pid = 0
    try:
        command_pid = spawn(argv, output_fd)
        os.close(output_fd)  # only the command's processes may keep the output open
        _write(f"pid {command_pid}" + ("" if subreaper else " no-subreaper"))
        while True:
            remaining = reap(command_pid, report)
            while report:
                _write(report.pop(0))
            if not remaining:
                break
            ready, _, _ = select.select([0, wake_read], [], [], PARENT_CHECK)
            if wake_read in ready:
                with contextlib.suppress(OSError):
                    os.read(wake_read, 512)
            if os.getppid() != parent:
                _stop()
            if 0 in ready:
                line = _read_line(0, pending)
                if line is None or line.strip() == "kill":
                    _stop()
    except _Stop:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not stop the kill
        if command_pid:
            kill_tree(command_pid, None if subreaper else command_pid, report)
        while report:
            _write(report.pop(0))
    except OSError as exc:
        _write(f"error {exc}")
        return 1
    _write("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
