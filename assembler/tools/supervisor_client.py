"""The assembler's side of the process supervisor: one per process, a pipe trio per command.

`SupervisorHost` starts `process_supervisor.py` once (again after it died, or in a
forked copy of this process) and hands it each command as one message on a Unix
socket, with three pipes attached: control (we write `kill`; our end closing means
the same), status (lines from the command supervisor) and the command's output. A
command's guarantees are its own command supervisor's (subreaper, kill-everything,
end-of-file on the control pipe when this process dies), so the long-lived process
can be shared by every agent, event loop and thread of this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assembler.errors import ToolError

SUPERVISOR = Path(__file__).with_name("process_supervisor.py")


class SupervisorHost:
    """The long-lived supervisor of this process, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._popen: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None
        self._owner = 0

    @property
    def pid(self) -> int | None:
        """The supervisor's pid while one runs for this process."""
        popen = self._popen
        return popen.pid if popen is not None and self._owner == os.getpid() else None

    def start(self) -> None:
        """Start the supervisor now unless it runs (it is started on first use anyway)."""
        with self._lock:
            self._running()

    def submit(self, request: Mapping[str, Any], fds: list[int]) -> None:
        """Send one command; the descriptors are duplicated into the supervisor."""
        data = json.dumps(request).encode()
        with self._lock:
            for attempt in (1, 2):
                channel = self._running()
                try:
                    socket.send_fds(channel, [data], fds)
                    return
                except OSError as e:
                    self._discard()
                    if attempt == 2:
                        raise ToolError(f"the process supervisor is not available: {e}") from e

    def _running(self) -> socket.socket:
        popen, channel = self._popen, self._channel
        if (
            popen is None
            or channel is None
            or self._owner != os.getpid()
            or popen.poll() is not None
        ):
            self._discard()
            return self._start()
        return channel

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._popen = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SUPERVISOR)],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={},
                start_new_session=True,  # the terminal's Ctrl-C goes to the assembler only
            )
        except OSError as e:
            ours.close()
            raise ToolError(f"the process supervisor could not be started: {e}") from e
        finally:
            theirs.close()
        self._channel = ours
        self._owner = os.getpid()
        return ours

    def _discard(self) -> None:
        """Forget the supervisor: closing our end makes it exit (in a forked copy of
        this process only the copy's descriptor closes; the parent's one lives on)."""
        channel, popen, owner = self._channel, self._popen, self._owner
        self._channel = self._popen = None
        if channel is not None:
            channel.close()
        if popen is not None and owner == os.getpid():
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                popen.wait(timeout=0)


HOST = SupervisorHost()


def wait_closed(fds: list[int], deadline: float) -> list[int]:
    """Read each status pipe in `fds` until end-of-file or `deadline` (monotonic); the
    descriptors still open at the deadline."""
    open_fds = list(fds)
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select(open_fds, [], [], left)
        for fd in ready:
            if at_end(fd):
                open_fds.remove(fd)
    return open_fds


def at_end(fd: int) -> bool:
    """Drain what the status pipe `fd` (non-blocking) holds; whether it reached
    end-of-file (the command supervisor exited)."""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if not chunk:
            return True
