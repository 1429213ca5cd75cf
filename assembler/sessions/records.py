"""Session files on disk: the records, and reading and writing them line by line.

The format and its guarantees are described in `assembler.sessions.store`; this module
holds the record types and the file operations (one `O_APPEND` write per record,
tolerant reading, atomic rewrites), so the store can speak of sessions and trees.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import secrets
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from assembler.errors import SessionError
from assembler.files import atomic_write
from assembler.sessions.file_reads import open_regular, read_header_line

if sys.platform != "win32":
    import fcntl

FORMAT_VERSION: Final = 1
HEADER_TYPE: Final = "session"
SUFFIX: Final = ".jsonl"

ENTRY_KEYS: Final = frozenset({"id", "parent", "type", "time"})
"""Keys of an entry record that belong to the log; a payload may not use them."""

HEADER_KEYS: Final = frozenset(
    {"type", "version", "id", "agent", "manifest", "model", "created"}
    | {"parent_session", "forked_from"}
)
"""Keys of the header that the store sets; metadata may not use them."""


@dataclass(frozen=True)
class Entry:
    """One record after the header: its place in the tree, its type and its payload."""

    id: str
    parent: str | None
    type: str
    time: str
    payload: Mapping[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        """The JSON object written for this entry (log keys first, then the payload)."""
        return {
            "id": self.id,
            "parent": self.parent,
            "type": self.type,
            "time": self.time,
            **self.payload,
        }

    @classmethod
    def from_record(cls, record: object) -> Entry | None:
        """The entry a parsed line holds, or None when the line is not an entry."""
        if not isinstance(record, dict):
            return None
        entry_id, entry_type = record.get("id"), record.get("type")
        parent, time = record.get("parent"), record.get("time", "")
        if not isinstance(entry_id, str) or not entry_id or not isinstance(entry_type, str):
            return None
        if parent is not None and not isinstance(parent, str):
            return None
        payload = {key: value for key, value in record.items() if key not in ENTRY_KEYS}
        return cls(entry_id, parent, entry_type, time if isinstance(time, str) else "", payload)


@dataclass(frozen=True)
class SessionInfo:
    """What `SessionStore.list` knows about a session from its header and file stat."""

    id: str
    path: Path
    agent: str
    model: str
    manifest: str | None
    created: str
    modified: float
    parent_session: str | None
    header: Mapping[str, Any]


def new_session_id() -> str:
    """`20261130T091500Z-3fa9c1`: sorts by creation time, unique by its random tail."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def new_entry_id() -> str:
    """12 random hex digits: short, and unique without coordinating between writers."""
    return secrets.token_hex(6)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_record(record: Mapping[str, Any], *, what: str) -> bytes:
    """One complete line. Lone surrogates (from undecodable tool output) are escaped."""
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SessionError(f"{what} cannot be stored as JSON: {exc}") from exc
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return data + b"\n"


def append_line(path: Path, line: bytes, fsync: bool) -> None:
    flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # no O_CREAT: a session file starts with its header
    except FileNotFoundError as exc:
        raise SessionError(f"the session file {path} no longer exists") from exc
    except OSError as exc:
        raise SessionError(f"cannot open the session file {path}: {exc}") from exc
    try:
        lock_for_append(fd)
        size = os.fstat(fd).st_size
        if size:
            os.lseek(fd, -1, os.SEEK_END)  # O_APPEND writes go to the end regardless
            if os.read(fd, 1) != b"\n":
                line = b"\n" + line  # isolate a torn tail left by a crashed writer
        written = os.write(fd, line)
        while written < len(line):  # only on a short write (disk full, signal)
            written += os.write(fd, line[written:])
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        raise SessionError(f"cannot write to the session file {path}: {exc}") from exc
    finally:
        os.close(fd)


def lock_for_append(fd: int) -> None:
    """Serialise appenders that cooperate, so the torn-tail check sees whole lines.

    Without it, the last byte can be read while another process's line is half copied
    in, and a needless newline (a harmless blank line) gets written. Lines stay whole
    either way: that comes from the single `O_APPEND` write. Released by `os.close`.
    """
    if sys.platform != "win32":
        # A filesystem without locks (some network mounts): carry on unlocked.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)


def write_atomic(
    path: Path, header: Mapping[str, Any], entries: Iterable[Entry], *, replace: bool
) -> None:
    """Write header and entries to a temp file, fsync, rename over `path`, fsync the dir."""
    data = b"".join(
        [encode_record(header, what="the session header")]
        + [encode_record(entry.to_record(), what=f"entry {entry.id}") for entry in entries]
    )
    if not replace and path.exists():
        raise SessionError(f"the session file {path} already exists")
    try:
        atomic_write(path, data, temp_prefix=".")
    except OSError as exc:
        raise SessionError(f"cannot write the session file {path}: {exc}") from exc


def parse_header(line: bytes, path: Path) -> dict[str, Any]:
    try:
        header = json.loads(line.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise SessionError(f"{path} is not a session file: its first line is not JSON") from exc
    if not isinstance(header, dict) or header.get("type") != HEADER_TYPE:
        raise SessionError(f"{path} is not a session file: its first line is not a header")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError(f"{path}: the header has no valid 'version'")
    if version > FORMAT_VERSION:
        raise SessionError(
            f"{path} uses session format {version}; this agent-assembler reads up to "
            f"{FORMAT_VERSION}, upgrade it to open this session"
        )
    if not isinstance(header.get("id"), str) or not header["id"]:
        raise SessionError(f"{path}: the header has no session 'id'")
    return header


def read_session_file(path: Path) -> tuple[dict[str, Any], builtins.list[Entry], int]:
    """The header, the readable entries and the number of bad lines skipped."""
    try:
        fd, _ = open_regular(path)  # a FIFO would block, a device never end
        with os.fdopen(fd, "rb") as file:
            data = file.read()
    except FileNotFoundError as exc:
        raise SessionError(f"no session file at {path}") from exc
    except OSError as exc:
        raise SessionError(f"cannot read the session file {path}: {exc}") from exc
    lines = data.split(b"\n")  # bytes: U+2028 and friends inside JSON strings are not breaks
    header_line = lines.pop(0)
    if not header_line.strip():
        raise SessionError(f"{path} is empty or does not start with a session header")
    header = parse_header(header_line, path)
    entries: builtins.list[Entry] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = Entry.from_record(json.loads(line.decode("utf-8")))
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            entry = None
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    return header, entries, skipped


def read_info(path: Path) -> SessionInfo | None:
    """A session's summary from its first line only; None for unreadable files, and
    for anything but a regular file or a header over `MAX_HEADER_BYTES` (see
    `assembler.sessions.file_reads`)."""
    try:
        fd, status = open_regular(path)
        try:
            first = read_header_line(fd)
        finally:
            os.close(fd)
        if first is None:
            return None
        modified = status.st_mtime
        header = parse_header(first, path)
    except (OSError, SessionError):
        return None
    manifest = header.get("manifest")
    parent = header.get("parent_session")
    return SessionInfo(
        id=str(header["id"]),
        path=path,
        agent=str(header.get("agent", "")),
        model=str(header.get("model", "")),
        manifest=manifest if isinstance(manifest, str) else None,
        created=str(header.get("created", "")),
        modified=modified,
        parent_session=parent if isinstance(parent, str) else None,
        header=header,
    )
