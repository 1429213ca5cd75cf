"""Session files: an append-only JSON-lines log of one agent run, as a tree of entries.

Why this shape
--------------
A run is recorded while it happens, so a crash, a `kill -9` or a full disk must cost
at most the record being written, never the file. Hence:

* One record per line, written with ONE `os.write` to a descriptor opened with
  `O_APPEND`: the kernel places each write at the current end of file, so two
  processes appending to the same session never interleave inside a line. Appenders
  also take an advisory `flock` (where there is one) around the write, only so that
  the check for a torn tail below never mistakes another writer's line in progress
  for one.
* Reading never fails because of a bad line. A line that is not UTF-8 JSON, is not
  an object, or lacks a string `id`/`type` (a torn write, a stray edit, binary
  garbage) is skipped and counted in `Session.skipped`; the file is never truncated or
  dropped. A final line without its newline is kept when it parses as a whole entry
  (the write was complete up to the newline) and skipped otherwise. The next append
  starts with a newline if the file does not end with one, so a torn tail stays an
  isolated bad line instead of corrupting the new record.
* Whole-file rewrites (new sessions, forks, compaction) go through a temporary file in
  the same directory, `fsync`, `os.replace` and an `fsync` of the directory, so a
  reader sees the old file or the new one, never half of either.

Every entry has an `id` and the `parent` it continues from, so one file holds a tree:
steering or retrying from an earlier point adds a second child to that entry instead
of destroying what came after it. `Session.leaf` is the entry the next append hangs
from (the last one appended); `Session.branch(leaf)` walks the parents back to the
root, and `Session.messages(leaf)` is the conversation along that path.

File format (version 1)
-----------------------
Line 1 is the header, written atomically when the file is created::

    {"type": "session", "version": 1, "id": "20261130T091500Z-3fa9c1",
     "agent": "reviewer", "manifest": "/abs/agent.yaml" | null, "model": "openai:gpt-4o",
     "created": "2026-11-30T09:15:00.123Z",
     "parent_session": "<id>", "forked_from": "<entry id>",   # forks only
     ...metadata}

Every later line is an entry ``{"id", "parent", "type", "time", ...payload}``; `time`
is ISO-8601 UTC with milliseconds. Entry types the runner writes (payloads are free
form, these are the conventions):

* ``message``: one conversation turn, ``{"message": message_to_dict(msg)}``, plus
  ``"usage": usage_to_dict(u)`` after an assistant response.
* ``event``: a runner event (turn start/end, errors, cancellation) for the audit trace.
* ``tool_trace``: an audit record of one tool call (arguments, outcome, duration).
* ``compaction``: a summary replacing the entries before it (see `Session.rewrite`).
* ``model_change``: the model was switched mid-session (``{"model": "provider:name"}``).
"""

from __future__ import annotations

import builtins
import contextlib
import enum
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
from assembler.messages import Message, Usage
from assembler.sessions.codec import message_from_dict, message_to_dict, usage_to_dict

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


class _Default(enum.Enum):
    LEAF = "leaf"


LEAF: Final = _Default.LEAF
"""Default `parent_id` of `Session.append`: hang the entry from the current leaf."""


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


class Session:
    """One open session file. Cheap to keep: it holds no descriptor between writes.

    Each append opens the file anew, so a session stays correct after `rewrite`
    replaced the file underneath it, and nothing needs closing.
    """

    def __init__(self, path: Path, header: Mapping[str, Any], leaf: str | None = None) -> None:
        self.path = path
        self.header: Mapping[str, Any] = dict(header)
        self.leaf = leaf
        self.skipped = 0
        """Bad lines skipped by the last `entries()` (or by opening the session)."""

    @classmethod
    def load(cls, path: Path) -> Session:
        """Open an existing session file; the leaf is the last entry in it."""
        header, entries, skipped = _read(path)
        session = cls(path, header, entries[-1].id if entries else None)
        session.skipped = skipped
        return session

    @property
    def id(self) -> str:
        return str(self.header["id"])

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, path={str(self.path)!r}, leaf={self.leaf!r})"

    def append(
        self,
        type: str,
        payload: Mapping[str, Any] | None = None,
        parent_id: str | _Default | None = LEAF,
        *,
        fsync: bool = False,
    ) -> Entry:
        """Write one entry as one line and make it the leaf.

        `parent_id` defaults to the current leaf; pass an earlier entry id to start a
        branch, or None for a new root. `fsync=True` waits until the line is on disk
        (for records that must survive a power cut, at the cost of a disk flush).
        """
        if not isinstance(type, str) or not type or type == HEADER_TYPE:
            raise SessionError(f"{type!r} is not a valid entry type")
        payload = dict(payload or {})
        clash = sorted(str(key) for key in payload if key in ENTRY_KEYS or not isinstance(key, str))
        if clash:
            raise SessionError(
                f"a {type!r} entry payload cannot use the keys {', '.join(clash)} "
                "(reserved, or not strings)"
            )
        parent = self.leaf if parent_id is LEAF else parent_id
        entry = Entry(new_entry_id(), parent, type, _now(), payload)
        _append_line(self.path, _encode(entry.to_record(), what=f"the {type!r} entry"), fsync)
        self.leaf = entry.id
        return entry

    def append_message(
        self,
        msg: Message,
        *,
        usage: Usage | None = None,
        parent_id: str | _Default | None = LEAF,
        fsync: bool = False,
    ) -> Entry:
        """Append a `message` entry (with the response's usage, when given)."""
        payload: dict[str, Any] = {"message": message_to_dict(msg)}
        if usage is not None:
            payload["usage"] = usage_to_dict(usage)
        return self.append("message", payload, parent_id, fsync=fsync)

    def entries(self) -> list[Entry]:
        """Every readable entry in file order; bad lines are counted in `skipped`."""
        _, entries, self.skipped = _read(self.path)
        return entries

    def branch(self, leaf_id: str | None = None) -> list[Entry]:
        """The entries from the root down to `leaf_id` (default: the current leaf).

        If a parent is missing (its line was lost), the path starts after the gap: what
        can be read is returned rather than nothing. A cycle means the file was edited
        into nonsense and raises `SessionError`.
        """
        target = self.leaf if leaf_id is None else leaf_id
        if target is None:
            return []
        by_id: dict[str, Entry] = {}
        for entry in self.entries():
            by_id.setdefault(entry.id, entry)
        if target not in by_id:
            raise SessionError(f"session {self.id} has no entry {target!r}")
        path: list[Entry] = []
        seen: set[str] = set()
        current: str | None = target
        while current is not None and current in by_id:
            if current in seen:
                raise SessionError(f"session {self.id}: the parents of {target!r} form a cycle")
            seen.add(current)
            entry = by_id[current]
            path.append(entry)
            current = entry.parent
        path.reverse()
        return path

    def messages(self, leaf_id: str | None = None) -> list[Message]:
        """The conversation along the path root..leaf (the `message` entries on it)."""
        result: list[Message] = []
        for entry in self.branch(leaf_id):
            if entry.type != "message":
                continue
            try:
                result.append(message_from_dict(entry.payload.get("message")))
            except SessionError as exc:
                raise SessionError(f"session {self.id}, entry {entry.id}: {exc}") from exc
        return result

    def fork(self, entry_id: str, store: SessionStore | None = None) -> Session:
        """A new session holding exactly the path root..`entry_id`, ids kept.

        The header copies agent, manifest, model and metadata, and records
        `parent_session` and `forked_from`. The new file is written atomically; its
        leaf is `entry_id`, so the next append continues from there.
        """
        entries = self.branch(entry_id)
        fields = {key: value for key, value in self.header.items() if key not in HEADER_KEYS}
        target = store if store is not None else SessionStore(self.path.parent)
        return target._create(
            agent=str(self.header.get("agent", "")),
            manifest=self.header.get("manifest"),
            model=str(self.header.get("model", "")),
            extra={"parent_session": self.id, "forked_from": entry_id},
            metadata=fields,
            entries=entries,
        )

    def rewrite(self, entries: Iterable[Entry]) -> None:
        """Replace every entry (the header is kept), atomically; the leaf becomes the last.

        For compaction. Entries appended by another process between reading and the
        rename would be lost, so only the session's single writer should call this.
        """
        kept = builtins.list(entries)
        _write_atomic(self.path, self.header, kept, replace=True)
        self.leaf = kept[-1].id if kept else None


class SessionStore:
    """The session files of one directory (usually one agent's)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"SessionStore({str(self.directory)!r})"

    def create(
        self,
        agent: str,
        manifest: Path | None,
        model: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Start a new session file holding only its header."""
        return self._create(
            agent=agent,
            manifest=None if manifest is None else str(manifest),
            model=model,
            extra={},
            metadata=dict(metadata or {}),
            entries=[],
        )

    def open(self, session_id_or_path: str | Path) -> Session:
        """Open a session by path, by id, or by an unambiguous prefix of its id."""
        return Session.load(self._resolve(session_id_or_path))

    def list(self) -> builtins.list[SessionInfo]:
        """Every readable session, most recently written first; reads only headers."""
        if not self.directory.is_dir():
            return []
        infos: builtins.list[SessionInfo] = []
        for path in self.directory.glob(f"*{SUFFIX}"):
            info = _info(path)
            if info is not None:
                infos.append(info)
        infos.sort(key=lambda info: (info.modified, info.created, info.id), reverse=True)
        return infos

    def latest(self) -> SessionInfo | None:
        """The session written most recently, if any (what `--continue` resumes)."""
        infos = self.list()
        return infos[0] if infos else None

    def _create(
        self,
        *,
        agent: str,
        manifest: object,
        model: str,
        extra: Mapping[str, Any],
        metadata: Mapping[str, Any],
        entries: builtins.list[Entry],
    ) -> Session:
        clash = sorted(str(key) for key in metadata if key in HEADER_KEYS)
        if clash:
            raise SessionError(f"session metadata cannot use the reserved keys {', '.join(clash)}")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionError(
                f"cannot create the session directory {self.directory}: {exc}"
            ) from exc
        while True:
            session_id = new_session_id()
            path = self.directory / f"{session_id}{SUFFIX}"
            if not path.exists():
                break
        header: dict[str, Any] = {
            "type": HEADER_TYPE,
            "version": FORMAT_VERSION,
            "id": session_id,
            "agent": agent,
            "manifest": manifest,
            "model": model,
            "created": _now(),
            **extra,
            **metadata,
        }
        _write_atomic(path, header, entries, replace=False)
        return Session(path, header, entries[-1].id if entries else None)

    def _resolve(self, session_id_or_path: str | Path) -> Path:
        given = str(session_id_or_path)
        if isinstance(session_id_or_path, Path) or given.endswith(SUFFIX) or os.sep in given:
            path = Path(session_id_or_path)
            if not path.is_file():
                raise SessionError(f"no session file at {path}")
            return path
        exact = self.directory / f"{given}{SUFFIX}"
        if given and exact.is_file():
            return exact
        try:
            names = sorted(p.name for p in self.directory.iterdir())
        except OSError:
            names = []
        matches = [n for n in names if n.endswith(SUFFIX) and given and n.startswith(given)]
        if len(matches) == 1:
            return self.directory / matches[0]
        if not matches:
            raise SessionError(f"no session {given!r} in {self.directory}")
        shown = ", ".join(name.removesuffix(SUFFIX) for name in matches[:5])
        raise SessionError(f"{given!r} matches {len(matches)} sessions ({shown}...); be specific")


def new_session_id() -> str:
    """`20261130T091500Z-3fa9c1`: sorts by creation time, unique by its random tail."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def new_entry_id() -> str:
    """12 random hex digits: short, and unique without coordinating between writers."""
    return secrets.token_hex(6)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _encode(record: Mapping[str, Any], *, what: str) -> bytes:
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


def _append_line(path: Path, line: bytes, fsync: bool) -> None:
    flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # no O_CREAT: a session file starts with its header
    except FileNotFoundError as exc:
        raise SessionError(f"the session file {path} no longer exists") from exc
    except OSError as exc:
        raise SessionError(f"cannot open the session file {path}: {exc}") from exc
    try:
        _lock(fd)
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


def _lock(fd: int) -> None:
    """Serialise appenders that cooperate, so the torn-tail check sees whole lines.

    Without it, the last byte can be read while another process's line is half copied
    in, and a needless newline (a harmless blank line) gets written. Lines stay whole
    either way: that comes from the single `O_APPEND` write. Released by `os.close`.
    """
    if sys.platform != "win32":
        # A filesystem without locks (some network mounts): carry on unlocked.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)


def _write_atomic(
    path: Path, header: Mapping[str, Any], entries: Iterable[Entry], *, replace: bool
) -> None:
    """Write header and entries to a temp file, fsync, rename over `path`, fsync the dir."""
    data = b"".join(
        [_encode(header, what="the session header")]
        + [_encode(entry.to_record(), what=f"entry {entry.id}") for entry in entries]
    )
    if not replace and path.exists():
        raise SessionError(f"the session file {path} already exists")
    try:
        atomic_write(path, data, temp_prefix=".")
    except OSError as exc:
        raise SessionError(f"cannot write the session file {path}: {exc}") from exc


def _parse_header(line: bytes, path: Path) -> dict[str, Any]:
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


def _read(path: Path) -> tuple[dict[str, Any], builtins.list[Entry], int]:
    """The header, the readable entries and the number of bad lines skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise SessionError(f"no session file at {path}") from exc
    except OSError as exc:
        raise SessionError(f"cannot read the session file {path}: {exc}") from exc
    lines = data.split(b"\n")  # bytes: U+2028 and friends inside JSON strings are not breaks
    header_line = lines.pop(0)
    if not header_line.strip():
        raise SessionError(f"{path} is empty or does not start with a session header")
    header = _parse_header(header_line, path)
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


def _info(path: Path) -> SessionInfo | None:
    """A session's summary from its first line only; None for unreadable files."""
    try:
        with path.open("rb") as file:
            first = file.readline()
        modified = path.stat().st_mtime
        header = _parse_header(first, path)
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
