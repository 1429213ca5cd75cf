"""A seccomp filter through ctypes: the socket half of the sandbox (standard library only).

Landlock cannot refuse UDP, Unix-socket connections or raw sockets, and its TCP rules
name ports, not hosts. A seccomp filter can refuse creating the socket at all: with
`network: off` every `socket()` call fails with EPERM (`socketpair()`, which only
joins two processes of the command, stays allowed); with `network: allow` only
Internet sockets may be created, and they live in a private network namespace where
the only thing listening is the filtering proxy. The filter is inherited by every
child and cannot be removed.

Always refused, whatever the mode: `io_uring` (its operations create sockets and open
files without passing through this filter: ENOSYS, so programs fall back to plain
calls), loading kernel modules and kexec, and the kernel keyrings (where a login may
keep credentials). A system call of another architecture's table (32-bit calls from a
64-bit process, x32) kills the process: the filter only knows the native numbers.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_NR = 0  # offsetof(struct seccomp_data, nr)
_ARCH = 4
_ARG0 = 16  # low 32 bits of args[0] (little-endian)

AF_INET = 2
AF_INET6 = 10


@dataclass(frozen=True)
class Arch:
    """One architecture's audit value and the numbers of the calls the filter names."""

    audit: int
    socket: int
    truncate: int
    refused: tuple[int, ...]  # kernel modules, kexec, keyrings
    io_uring: tuple[int, ...] = (425, 426, 427)
    x32_bit: int | None = None  # set on x86_64: calls with this bit are the x32 ABI


ARCHES = {
    # init_module, delete_module, finit_module, kexec_load, kexec_file_load,
    # add_key, request_key, keyctl
    "x86_64": Arch(
        0xC000003E, 41, 76, (175, 176, 313, 246, 320, 248, 249, 250), x32_bit=0x40000000
    ),
    "aarch64": Arch(0xC00000B7, 198, 45, (105, 106, 273, 104, 294, 217, 218, 219)),
}


def native_arch() -> Arch | None:
    """This machine's entry in `ARCHES`; None where the filter cannot be built."""
    return ARCHES.get(platform.machine())


def build_filter(arch: Arch, network: str, *, refuse_truncate: bool = False) -> bytes:
    """The BPF program for `network` (`off`, `allow` or `on`), as `sock_filter`s.

    `refuse_truncate`: also refuse `truncate(path)` (Landlock before ABI 3 does not
    cover it; `ftruncate` on a file opened for writing stays allowed).
    """
    eperm = RET_ERRNO | errno.EPERM
    program: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, arch.audit),
        (_RET_K, 0, 0, RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch.x32_bit is not None:
        program += [(_JGE_K, 0, 1, arch.x32_bit), (_RET_K, 0, 0, RET_KILL_PROCESS)]
    refused = [(nr, eperm) for nr in arch.refused]
    refused += [(nr, RET_ERRNO | errno.ENOSYS) for nr in arch.io_uring]
    if refuse_truncate:
        refused.append((arch.truncate, eperm))
    for number, action in refused:
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, action)]
    if network == "off":
        program += [(_JEQ_K, 0, 1, arch.socket), (_RET_K, 0, 0, eperm)]
    elif network == "allow":
        # socket(): Internet families only; the namespace confines where they reach.
        block = [
            (_LD_W_ABS, 0, 0, _ARG0),
            (_JEQ_K, 2, 0, AF_INET),
            (_JEQ_K, 1, 0, AF_INET6),
            (_RET_K, 0, 0, eperm),
            (_RET_K, 0, 0, RET_ALLOW),
        ]
        program += [(_JEQ_K, 0, len(block), arch.socket), *block]
    program.append((_RET_K, 0, 0, RET_ALLOW))
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


_libc = ctypes.CDLL(None, use_errno=True)


def set_no_new_privs() -> None:
    """No exec may gain privileges from now on (setuid, file capabilities): required
    before an unprivileged process installs a filter or a Landlock ruleset."""
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _error("prctl(PR_SET_NO_NEW_PRIVS)")


def install(program: bytes) -> None:
    """Install `program` on this thread (and everything it starts)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise _error("prctl(PR_SET_SECCOMP)")


def available() -> bool:
    """Whether this kernel filters system calls (checked without installing one)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("Seccomp:") for line in status)
    except OSError:
        return False


def _error(step: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{step}: {os.strerror(number)}")
