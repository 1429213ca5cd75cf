"""Opening, reading and replacing workspace files, with the refusals the file tools share.

Only regular files are read or written. A FIFO, socket or device in the workspace
would block the tool (a FIFO blocks `open` until someone opens the other end) or
never end (`/dev/zero`), so files are opened with `O_NONBLOCK` and checked with
`fstat` on the open descriptor before a byte is read: what is checked is what is
read, even if the path changes in between. Writes go to a temporary file in the same
directory that is then renamed over the target (`assembler.files.atomic_write`): a
crash leaves the old file or the new one, and a hard link to a file outside the
workspace is replaced, never written through.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from assembler.errors import ToolError
from assembler.files import atomic_write
from assembler.tools.builtin.sniff import looks_binary

__all__ = [
    "MAX_EDIT_BYTES",
    "existing_mode",
    "looks_binary",
    "open_regular",
    "read_text_exact",
    "replace_file",
]

#: The largest file `edit` loads whole (it must hold the old and the new text).
MAX_EDIT_BYTES = 16 * 1024 * 1024

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def open_regular(path: Path, shown: str) -> tuple[int, int]:
    """An open descriptor on the regular file `path`, and its size; or a `ToolError`.

    Never blocks: `O_NONBLOCK` makes opening a FIFO return at once, and the type is
    checked on the descriptor itself. `O_NOFOLLOW`: the caller resolved every link
    already, so a link here means the path changed since, and is refused.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise ToolError(f"{shown}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"{shown} became a symlink while it was opened; refusing") from exc
        if exc.errno == errno.ENXIO:  # a socket (or a FIFO opened for writing)
            raise ToolError(f"{shown} is not a regular file") from exc
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown} is a directory; use `ls` to list it")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{shown} is not a regular file ({_kind(info.st_mode)}); not read")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_text_exact(path: Path, shown: str, *, max_bytes: int = MAX_EDIT_BYTES) -> str:
    """The whole file decoded strictly, so encoding it again gives back the same bytes.

    `edit` needs this: a lossy decode would silently rewrite bytes it did not touch.
    Files over `max_bytes` are refused before they are read.
    """
    fd, size = open_regular(path, shown)
    try:
        if size > max_bytes:
            raise ToolError(
                f"{shown} is {size} bytes; `edit` loads files up to {max_bytes} bytes. "
                "Change it with a command in `bash` (sed, a script) instead."
            )
        data = _read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew after fstat
        raise ToolError(f"{shown} is larger than {max_bytes} bytes; not edited")
    if looks_binary(data):
        raise ToolError(f"{shown} looks like a binary file ({len(data)} bytes); not shown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); it cannot be edited as text"
        ) from exc


def existing_mode(path: Path, shown: str) -> int | None:
    """The permission bits of the regular file at `path`, None when there is no file.

    Anything else there (a FIFO, socket, device or directory) is refused: a write
    must replace a file, not feed a reader or a device.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{shown} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file ({_kind(info.st_mode)}); not written")
    return stat.S_IMODE(info.st_mode)


def replace_file(path: Path, data: bytes, mode: int | None) -> None:
    """Write `data` to a new file beside `path` and rename it over `path`.

    `mode`: the permission bits to keep (an existing file's); None for a new file,
    which gets the usual 0666 minus the umask.
    """
    atomic_write(path, data, mode=mode, temp_prefix=".assembler-")


def _read_at_most(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"
