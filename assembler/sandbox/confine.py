"""Apply a `Policy` to a process right before it runs the command (standard library only).

Two steps, split around `fork`. `prepare` runs in the supervisor: it builds the
Landlock ruleset (walking around the hidden paths), compiles the seccomp filter and
opens the private network namespace, so that anything this machine cannot give fails
there, with a message, before a process exists. `enter` runs in the child, between
`fork` and `exec`, and only makes the system calls that cannot fail on a machine
that passed `prepare`, in this order:

1. `setns` into the private network namespace (`network: allow`), while the child
   still has the right to;
2. `no_new_privs`: nothing it executes gains privileges (setuid, file capabilities);
3. Landlock: the file system (and, from ABI 6, no signals to processes outside);
4. every capability dropped, the bounding set included, so a command run as root is
   as bound as any other (no module loading, no raw sockets, no `mount`);
5. the seccomp filter (sockets, `io_uring`, keyrings).

Run as a script, it is the wrapper that confines programs the supervisor does not
start (MCP stdio servers): `python -I -S confine.py POLICY_JSON -- PROGRAM ARGS...`.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # run as a script (`-I -S`): the package sits three levels up
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ctypes
import json
import os
from dataclasses import dataclass

from assembler.sandbox import landlock, seccomp
from assembler.sandbox.policy import Policy

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522


class ConfineError(Exception):
    """This machine cannot give the sandbox the policy asks for; the message says why."""


@dataclass
class Prepared:
    """What `enter` needs, made before the fork: open descriptors and a filter."""

    policy: Policy
    ruleset: int | None = None
    program: bytes | None = None
    netns: int | None = None
    userns: int | None = None
    last_capability: int = 40

    def close(self) -> None:
        """Close the descriptors (the parent's copies, once the child has them)."""
        for fd in (self.ruleset, self.netns, self.userns):
            if fd is not None:
                os.close(fd)
        self.ruleset = self.netns = self.userns = None

    def fds(self) -> tuple[int, ...]:
        return tuple(fd for fd in (self.ruleset, self.netns, self.userns) if fd is not None)


def prepare(policy: Policy) -> Prepared:
    """Everything `enter` needs for `policy`; `ConfineError` naming what is missing."""
    prepared = Prepared(policy)
    if not policy.confines:
        return prepared
    if not sys.platform.startswith("linux"):
        raise ConfineError(f"the sandbox needs Linux (this is {sys.platform})")
    arch = seccomp.native_arch()
    if arch is None or not seccomp.available():
        raise ConfineError("this kernel or architecture has no seccomp filter the sandbox knows")
    try:
        prepared.last_capability = _last_capability()
        version = landlock.abi() if policy.filesystem != "off" else 0
        if policy.filesystem != "off":
            if version < 1:
                raise ConfineError("this kernel has no Landlock (Linux 5.13 or later, enabled)")
            prepared.ruleset = _ruleset(policy, version)
        prepared.program = seccomp.build_filter(
            arch, policy.network, refuse_truncate=prepared.ruleset is not None and version < 3
        )
        if policy.network == "allow":
            if not policy.netns:
                raise ConfineError("`network: allow` needs the proxy's network namespace")
            if policy.userns:
                prepared.userns = os.open(policy.userns, os.O_RDONLY | os.O_CLOEXEC)
            prepared.netns = os.open(policy.netns, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        prepared.close()
        raise ConfineError(f"the sandbox could not be prepared: {e}") from e
    except ConfineError:
        prepared.close()
        raise
    return prepared


def _ruleset(policy: Policy, version: int) -> int:
    handled = landlock.handled_rights(version)
    scoped = landlock.SCOPE_SIGNAL if version >= 6 else 0
    ruleset = landlock.create_ruleset(handled, scoped=scoped)
    try:
        for root in policy.readable:
            landlock.grant(ruleset, root, landlock.READ & handled, policy.hidden)
        for root in policy.writable:
            landlock.grant(ruleset, root, landlock.WRITE & handled, policy.hidden)
        for device in policy.devices:
            landlock.add_rule(ruleset, device, landlock.DEVICE & handled)
    except OSError:
        os.close(ruleset)
        raise
    return ruleset


def enter(prepared: Prepared) -> None:
    """Confine this process (a child between `fork` and `exec`) for good."""
    if not prepared.policy.confines:
        return
    if prepared.userns is not None:
        _setns(prepared.userns, CLONE_NEWUSER)
    if prepared.netns is not None:
        _setns(prepared.netns, CLONE_NEWNET)
    seccomp.set_no_new_privs()
    if prepared.ruleset is not None:
        landlock.restrict_self(prepared.ruleset)
    drop_capabilities(prepared.last_capability)
    if prepared.program is not None:
        seccomp.install(prepared.program)
    prepared.close()


_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_capabilities(last: int) -> None:
    """Give up every capability for good: the bounding set (so an `exec` as root
    gains none back), the ambient set, then effective, permitted and inheritable."""
    for capability in range(last + 1):
        # EPERM without CAP_SETPCAP: a process that has no capabilities to drop.
        _libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"capset: {os.strerror(number)}")


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


def _setns(fd: int, kind: int) -> None:
    if _libc.setns(fd, kind) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"setns: {os.strerror(number)}")


def main(argv: list[str]) -> int:
    """`confine.py POLICY_JSON -- PROGRAM ARGS...`: confine this process, then exec."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: confine.py POLICY_JSON -- PROGRAM [ARGS...]\n")
        return 2
    try:
        prepared = prepare(Policy.from_dict(json.loads(argv[0])))
        enter(prepared)
    except (ConfineError, OSError) as e:
        sys.stderr.write(f"sandbox: {e}\n")
        return 126
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as e:
        sys.stderr.write(f"cannot run {argv[2]}: {e.strerror}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
