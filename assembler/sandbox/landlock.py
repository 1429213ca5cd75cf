"""Landlock through ctypes: the file-system half of the sandbox (standard library only).

Landlock (Linux 5.13+) lets an unprivileged process give up access to the file
system for itself and every process it starts; nothing it runs can lift it. A
ruleset names the rights it handles and, for each directory (or file) beneath which
some of them stay allowed, which ones. Everything handled and not granted is refused
with EACCES (EXDEV for a link or rename that would gain rights), wherever the path
leads: `..`, symlinks, hard links, `/proc/self/root` all resolve to the same inodes.

Landlock only grants, it never takes back a subtree: to keep `~/.ssh` unreadable
while `/` is readable, `grant` walks down to every hidden path and grants each of its
siblings instead (the hidden path's ancestors themselves then cannot be listed).

ABI versions (`abi()`): 1 the file system; 2 `REFER` (links and renames between
directories, refused outright before); 3 `TRUNCATE`; 4 TCP ports; 5 device ioctls;
6 scoping of signals and abstract Unix sockets; 7 audit logging.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable

SYS_CREATE_RULESET = 444  # the same number on every architecture (new syscall table)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

#: Rights a rule on a file (not a directory) may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
#: Everything a writable directory allows; device nodes (MAKE_CHAR, MAKE_BLOCK) never.
WRITE = (
    READ
    | WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
#: What `/dev/null`-like devices allow.
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV


class LandlockError(OSError):
    """A Landlock call failed; the message names the step."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def abi() -> int:
    """The Landlock ABI this kernel offers; 0 when it has none (or it is disabled)."""
    version = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return int(version) if version > 0 else 0


def handled_rights(version: int) -> int:
    """Every file-system right the kernel of ABI `version` knows (all are handled, so
    none is left open by omission)."""
    rights = (1 << 13) - 1
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def create_ruleset(fs_rights: int, *, scoped: int = 0) -> int:
    """A new ruleset handling `fs_rights` (and the `scoped` restrictions, ABI 6)."""
    attr = _RulesetAttr(fs_rights, 0, scoped)
    size = ctypes.sizeof(_RulesetAttr) if scoped else 16  # older kernels know 16 bytes
    fd = _libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if fd < 0:
        raise _error("landlock_create_ruleset")
    return int(fd)


def add_rule(ruleset: int, path: str, access: int) -> bool:
    """Allow `access` beneath `path` (masked to file rights for a file). False when
    the path does not exist or cannot be opened: nothing to grant then."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_RIGHTS
        if not access:
            return True
        attr = _PathBeneathAttr(access, fd)
        if _libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(attr), 0) < 0:
            raise _error(f"landlock_add_rule {path}")
    finally:
        os.close(fd)
    return True


def grant(ruleset: int, root: str, access: int, hidden: Iterable[str]) -> int:
    """Allow `access` beneath `root` except beneath every `hidden` path (absolute,
    resolved); the number of rules added."""
    return _grant(ruleset, root.rstrip("/") or "/", access, tuple(hidden))


def _grant(ruleset: int, path: str, access: int, hidden: tuple[str, ...]) -> int:
    prefix = path if path == "/" else path + "/"
    below = [h for h in hidden if h == path or h.startswith(prefix)]
    if not below:
        return int(add_rule(ruleset, path, access))
    if path in below:
        return 0
    try:
        entries = list(os.scandir(path))
    except OSError:
        return 0
    added = 0
    for entry in entries:
        if entry.is_symlink():
            continue  # what it leads to is granted (or not) where it is
        added += _grant(ruleset, prefix + entry.name, access, tuple(below))
    return added


def restrict_self(ruleset: int) -> None:
    """Enforce `ruleset` on this thread and everything it starts (needs
    `no_new_privs`, which `confine` sets first)."""
    if _libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) < 0:
        raise _error("landlock_restrict_self")


def _error(step: str) -> LandlockError:
    number = ctypes.get_errno()
    return LandlockError(number, f"{step}: {os.strerror(number) or errno.errorcode.get(number)}")
