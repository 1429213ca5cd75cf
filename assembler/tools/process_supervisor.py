"""The long-lived process that hands every `bash` command to a command supervisor.

Run as a script (`python -I -S process_supervisor.py`) by `assembler.tools.processes`,
once per assembler process (and again if it dies): standard library only, plus the
sandbox modules, which are standard library only too. It holds nothing of the agent's.

Its stdin is a Unix socket: one message per command (JSON with the command, its
sandbox policy and that policy's `key`, plus the command's three pipes attached). It
gives the message to an idle command supervisor (`command_supervisor.Worker`) that
already runs commands of the same sandbox, or to the spare it keeps forked ahead,
which then takes that sandbox on. A message without pipes asks the spare to take a
sandbox on before its first command (sent when an agent is built); it forks the next spare once it has nothing else to
do. So a command costs a hand-over and a `vfork`, not a new Python process.

It is a child subreaper too, and not dumpable: a command supervisor that dies (killed
from outside) leaves its command's processes to it, and it kills every process it
adopts. It retires command supervisors idle for `IDLE_RETIRE` seconds, keeps at most
`MAX_IDLE` idle per sandbox, and exits at end-of-file on its socket or when its
parent changes; each command supervisor then still answers for its command until the
assembler closes the command's control pipe.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # run as a script (`-I -S`): the package sits three levels up
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import contextlib
import gc
import json
import os
import select
import signal
import socket
import time
from dataclasses import dataclass, field

from assembler.tools.command_supervisor import (
    FDS_PER_REQUEST,
    MAX_REQUEST,
    PR_SET_DUMPABLE,
    Worker,
    become_subreaper,
    children_by_parent,
    descendants,
    libc,
)

#: Seconds between checks that the parent is still alive (besides end-of-file).
PARENT_CHECK = 0.5
#: Seconds an idle command supervisor is kept for the next command of its sandbox.
IDLE_RETIRE = 30.0
#: Idle command supervisors kept per sandbox, and in all (an evaluation makes a
#: sandbox per task: the oldest idle ones go first).
MAX_IDLE = 2
MAX_IDLE_TOTAL = 8
#: Seconds without a request before the next spare is forked.
SPARE_DELAY = 0.02


@dataclass
class _Handle:
    """A command supervisor as the long-lived one sees it."""

    pid: int
    link: socket.socket
    key: str | None = None  # None: the spare, which has not run anything yet
    busy: bool = False
    idle_since: float = field(default_factory=time.monotonic)


class Pool:
    """The command supervisors, the spare among them."""

    def __init__(self, channel: socket.socket, wake: tuple[int, int]) -> None:
        self.channel = channel
        self.wake = wake
        self.handles: dict[int, _Handle] = {}
        self.spare: _Handle | None = None

    def fork_spare(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # nothing of the long-lived one's but its code
            code = 1
            try:
                gc.disable()  # a collection would touch (copy) every page of the parent's
                signal.set_wakeup_fd(-1)
                # Nothing of the long-lived one's: its socket, the other links, and the
                # pipes of a request it may be holding right now (a command's output
                # must close when the command's processes are gone).
                keep = theirs.fileno()
                os.closerange(0, keep)
                os.closerange(keep + 1, 1 << 20)
                os.open(os.devnull, os.O_RDWR)  # descriptors 0, 1 and 2 stay taken
                while os.dup(0) < 2:
                    pass
                worker = Worker()
                worker.warm()
                code = worker.serve(theirs)
            finally:
                os._exit(code)
        theirs.close()
        self.spare = self.handles[pid] = _Handle(pid, ours)

    def hand_over(self, data: bytes, fds: list[int]) -> None:
        """Give one request to a command supervisor of its sandbox, else the spare."""
        try:
            key = str(json.loads(data).get("key", ""))
        except (ValueError, AttributeError):
            return
        for _ in range(3):  # a spare forked, a spare that died meanwhile, another
            handle = self._idle(key) or self.spare
            if handle is None:  # two new sandboxes in a row: fork one now
                self.fork_spare()
                continue
            try:
                socket.send_fds(handle.link, [data], fds)
            except OSError:
                self._drop(handle)
                continue
            handle.busy, handle.key = True, key
            if handle is self.spare:
                self.spare = None
            return

    def prepare(self, data: bytes) -> None:
        """Have the spare take a sandbox on now (unless one already has it)."""
        try:
            key = str(json.loads(data).get("key", ""))
        except (ValueError, AttributeError):
            return
        spare = self.spare
        if spare is None or any(h.key == key for h in self.handles.values()):
            return
        try:
            spare.link.send(data)
        except OSError:
            self._drop(spare)
            return
        spare.busy, spare.key = True, key  # until it says `idle`
        self.spare = None

    def _idle(self, key: str) -> _Handle | None:
        idle = [h for h in self.handles.values() if h.key == key and not h.busy]
        return max(idle, key=lambda h: h.idle_since) if idle else None

    def links(self) -> list[socket.socket]:
        return [h.link for h in self.handles.values() if h.link.fileno() >= 0]

    def on_link(self, link: socket.socket) -> None:
        """A command supervisor finished a command (`idle`), or is exiting."""
        handle = next((h for h in self.handles.values() if h.link is link), None)
        if handle is None:
            return
        try:
            message = link.recv(64)
        except OSError:
            message = b""
        if message == b"idle":
            handle.busy, handle.idle_since = False, time.monotonic()
        else:
            self._drop(handle)

    def retire(self) -> None:
        """Close the links of command supervisors idle too long or too many."""
        now = time.monotonic()
        idle = [h for h in self.handles.values() if h.key is not None and not h.busy]
        idle.sort(key=lambda h: h.idle_since, reverse=True)
        per_key: dict[str | None, int] = {}
        for position, handle in enumerate(idle):
            per_key[handle.key] = per_key.get(handle.key, 0) + 1
            too_many = per_key[handle.key] > MAX_IDLE or position >= MAX_IDLE_TOTAL
            if too_many or now - handle.idle_since > IDLE_RETIRE:
                self._drop(handle)

    def _drop(self, handle: _Handle) -> None:
        """Forget a command supervisor (closing the link makes an idle one exit)."""
        handle.link.close()
        handle.busy = True  # never handed anything again; removed once reaped
        handle.key = "(retired)"
        if handle is self.spare:
            self.spare = None

    def reaped(self, pid: int) -> None:
        handle = self.handles.pop(pid, None)
        if handle is not None:
            handle.link.close()
            if handle is self.spare:
                self.spare = None

    def kill_strays(self) -> None:
        """Kill every adopted process (a dead command supervisor's command) and all
        below it: the only children of this process are command supervisors."""
        for pid in children_by_parent().get(os.getpid(), []):
            if pid in self.handles:
                continue
            for target in [pid, *descendants(pid)]:
                with contextlib.suppress(OSError):
                    os.kill(target, signal.SIGKILL)


def serve(channel: socket.socket) -> int:
    """Hand every request to a command supervisor until end-of-file."""
    parent = os.getppid()
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    become_subreaper()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is the assembler's
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    gc.collect()
    gc.freeze()  # a collection in a forked copy would touch (copy) every page
    pool = Pool(channel, (wake_read, wake_write))
    while True:
        exited = False
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            pool.reaped(pid)
            exited = True
        if exited:
            pool.kill_strays()
        pool.retire()
        links = {link.fileno(): link for link in pool.links()}
        # `idle` messages before requests: a command supervisor says it is free just
        # before the assembler learns its command ended and sends the next one.
        waiting = [wake_read, *links, channel.fileno()]
        # The next spare is forked once nothing happened for a moment: forking while
        # a command starts would take the CPU it needs.
        pause = SPARE_DELAY if pool.spare is None else PARENT_CHECK
        ready, _, _ = select.select(waiting, [], [], pause)
        if os.getppid() != parent:
            return 0
        if not ready and pool.spare is None:
            pool.fork_spare()
        for fd in ready:
            if fd == wake_read:
                with contextlib.suppress(OSError):
                    os.read(wake_read, 512)
            elif fd == channel.fileno():
                if not _request(channel, pool):
                    return 0
            elif fd in links:
                pool.on_link(links[fd])


def _request(channel: socket.socket, pool: Pool) -> bool:
    """Read and hand over one request; False at end-of-file."""
    try:
        data, fds, _, _ = socket.recv_fds(channel, MAX_REQUEST, FDS_PER_REQUEST + 1)
    except OSError:
        return True
    if not data and not fds:
        return False
    try:
        if len(fds) == FDS_PER_REQUEST:
            pool.hand_over(data, fds)
        elif not fds:
            pool.prepare(data)
    finally:
        for fd in fds:
            os.close(fd)
    return True


def main() -> int:
    return serve(socket.socket(fileno=0))


if __name__ == "__main__":
    sys.exit(main())
