"""A private network namespace for `network: allow`, with the proxy's socket inside it.

A process in a new network namespace sees one loopback interface and nothing else:
no route to this machine's loopback servers, to the local network or to the
Internet, for TCP, UDP or anything else, and abstract Unix sockets of its own only.
Commands with `network: allow` enter one such namespace (one per agent), where the
only thing listening is the filtering proxy: its listening socket is made inside the
namespace by a short-lived helper and handed back, so the proxy itself runs in the
assembler, in the ordinary namespace, and connects out on the commands' behalf.

Run as a script, this module is that helper (`python -I -S netns.py`, stdin a Unix
socket): it enters a new namespace (and, unless root, a user namespace that maps
only the caller's own ids), brings loopback up, listens on `127.0.0.1`, sends the
listening socket and the namespace descriptors back, and exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
HELPER = Path(__file__)
START_TIMEOUT = 10.0


class NetworkError(OSError):
    """No private network namespace could be made; the message says why."""


@dataclass
class PrivateNetwork:
    """A namespace held open by descriptors of this process, and the listening socket
    in it. `netns_path` (and `userns_path`) are what a command supervisor opens to
    enter it; they are valid while this object is open."""

    listener: socket.socket
    netns: int
    userns: int | None

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    @property
    def netns_path(self) -> str:
        return f"/proc/{os.getpid()}/fd/{self.netns}"

    @property
    def userns_path(self) -> str:
        return f"/proc/{os.getpid()}/fd/{self.userns}" if self.userns is not None else ""

    def close(self) -> None:
        self.listener.close()
        for fd in (self.netns, self.userns):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def create() -> PrivateNetwork:
    """A new private network with a listening socket on its `127.0.0.1`."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        with subprocess.Popen(
            [sys.executable, "-I", "-S", str(HELPER)],
            stdin=theirs.fileno(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={},
            cwd="/",
        ) as helper:
            theirs.close()
            ours.settimeout(START_TIMEOUT)
            try:
                data, fds, _, _ = socket.recv_fds(ours, 4096, 3)
            except OSError as e:
                helper.kill()
                raise NetworkError(f"no private network namespace: {e}") from e
            assert helper.stderr is not None
            problem = helper.stderr.read().decode("utf-8", "replace").strip()
        if not fds:
            raise NetworkError(f"no private network namespace: {problem or 'the helper failed'}")
        answer = json.loads(data or b"{}")
        listener = socket.socket(fileno=fds[0])
        return PrivateNetwork(listener, fds[1], fds[2] if answer.get("userns") else None)
    finally:
        ours.close()
        theirs.close()


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe.fileno(), SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | IFF_UP))


def _unshare(flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"unshare: {os.strerror(number)}")


def _helper() -> int:
    channel = socket.socket(fileno=0)
    uid, gid = os.getuid(), os.getgid()
    user = uid != 0
    try:
        _unshare(CLONE_NEWNET | (CLONE_NEWUSER if user else 0))
        if user:  # map only our own ids; setgroups must be refused before gid_map
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        _loopback_up()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(512)
        fds = [listener.fileno(), os.open("/proc/self/ns/net", os.O_RDONLY)]
        if user:
            fds.append(os.open("/proc/self/ns/user", os.O_RDONLY))
    except OSError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    socket.send_fds(channel, [json.dumps({"userns": user}).encode()], fds)
    return 0


if __name__ == "__main__":
    sys.exit(_helper())
