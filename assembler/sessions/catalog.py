"""The sessions on this machine, summarised for listings (`assemble sessions list`, the
RPC `sessions` method) and found by id across agents (`assemble sessions show`).

A listing must stay cheap with many long sessions, so a summary does not decode every
entry: it counts the records after the header, decodes the first line that can be the
first user message, and the last complete line for the time of the last activity.
`Session.entries()` (every line decoded) is for reading one session whole.

Where sessions are: one directory per agent under `<data dir>/sessions/` (or the
`--session-dir` a run was given). A sub-agent's session sits beside its parent's, in
the parent's directory, with its own agent name in the header; filtering by agent
therefore reads the headers of every directory, not one folder.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assembler.errors import SessionError
from assembler.sessions.file_reads import bounded_lines, open_regular
from assembler.sessions.records import SUFFIX, Entry, SessionInfo, read_info
from assembler.sessions.store import Session, SessionStore, is_session_file
from assembler.user_dirs import default_data_dir

MAX_SUMMARY_LINE_BYTES = 32 << 20
"""Lines longer than this are counted as entries but not decoded by a summary."""


@dataclass(frozen=True)
class SessionSummary:
    """What a listing shows of one session."""

    id: str
    path: Path
    agent: str
    model: str
    workspace: str | None
    started: str
    last_activity: str
    entries: int
    first_message: str
    header: Mapping[str, Any] = field(default_factory=dict)

    @property
    def parent_session(self) -> str | None:
        value = self.header.get("parent_session")
        return value if isinstance(value, str) else None

    @property
    def delegated_from(self) -> Mapping[str, Any] | None:
        value = self.header.get("delegated_from")
        return value if isinstance(value, Mapping) else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`sessions list --format json`, RPC `sessions`)."""
        data: dict[str, Any] = {
            "id": self.id,
            "agent": self.agent,
            "model": self.model,
            "workspace": self.workspace,
            "started": self.started,
            "last_activity": self.last_activity,
            "entries": self.entries,
            "first_message": self.first_message,
            "file": str(self.path),
        }
        if self.parent_session is not None:
            data["parent_session"] = self.parent_session
            data["forked_from"] = self.header.get("forked_from")
        if self.delegated_from is not None:
            data["delegated_from"] = dict(self.delegated_from)
        return data


def sessions_root() -> Path:
    """`<data dir>/sessions`: one folder per agent below it."""
    return default_data_dir() / "sessions"


def session_directories(session_dir: Path | None = None) -> list[Path]:
    """`session_dir` alone when given, else every agent's folder under `sessions_root()`."""
    if session_dir is not None:
        return [session_dir]
    root = sessions_root()
    try:
        return sorted(path for path in root.iterdir() if path.is_dir())
    except OSError:
        return []


def summarise(info: SessionInfo) -> SessionSummary:
    """A session's summary from one read of its file (see the module docstring)."""
    count, first_message = 0, ""
    recent: deque[list[bytes | None]] = deque(maxlen=2)  # the last batches with entries
    try:
        fd, _ = open_regular(info.path)
    except (OSError, SessionError):
        fd = None
    if fd is not None:
        try:
            skip = 1  # the header
            for batch in bounded_lines(fd, MAX_SUMMARY_LINE_BYTES):
                # a line too long to decode (None) is still an entry
                entries = [line for line in batch[skip:] if line is None or line.strip()]
                skip = 0
                if not entries:
                    continue
                count += len(entries)
                recent.append(entries)
                if not first_message:
                    first_message = _first_user_text(entries)
        finally:
            os.close(fd)
    last = ""
    for line in (line for entries in reversed(recent) for line in reversed(entries)):
        entry = _entry(line) if line is not None else None
        if entry is not None and entry.time:
            last = entry.time
            break
    if last and info.created > last:  # a fork: the entries it copied are older than it
        last = info.created
    workspace = info.header.get("workspace")
    return SessionSummary(
        id=info.id,
        path=info.path,
        agent=info.agent,
        model=info.model,
        workspace=workspace if isinstance(workspace, str) else None,
        started=info.created,
        last_activity=last or _iso(info.modified) or info.created,
        entries=count,
        first_message=first_message,
        header=info.header,
    )


def list_sessions(
    directories: Iterable[Path], *, agent: str | None = None, limit: int | None = None
) -> list[SessionSummary]:
    """The sessions in `directories` (of `agent` only, when given), the most recently
    active first. Only headers are read to filter and order; `limit` sessions are then
    summarised."""
    infos: list[SessionInfo] = []
    for directory in directories:
        infos += [i for i in SessionStore(directory).list() if agent is None or i.agent == agent]
    infos.sort(key=_recency, reverse=True)
    chosen = infos if limit is None else infos[:limit]
    summaries = [summarise(info) for info in chosen]
    # stable: sessions last active in the same millisecond keep the file-time order
    summaries.sort(key=lambda s: s.last_activity, reverse=True)
    return summaries


def latest_session(directories: Iterable[Path], *, agent: str | None = None) -> SessionInfo | None:
    """The session written most recently in any of `directories` (of `agent` only,
    when given): what `sessions show` and `trace` show without an id. One rule with
    `SessionStore.latest`, which it asks in each directory."""
    found = [
        info
        for directory in directories
        if (info := SessionStore(directory).latest(agent=agent)) is not None
    ]
    return max(found, key=_recency, default=None)


def _recency(info: SessionInfo) -> tuple[float, str, str]:
    return info.modified, info.created, info.id


def find_session(reference: str | Path, directories: Iterable[Path]) -> Session:
    """A session by path, id, or unambiguous id prefix, in any of `directories`."""
    given = str(reference)
    if isinstance(reference, Path) or given.endswith(SUFFIX) or os.sep in given:
        return Session.load(Path(given))
    found: list[Path] = []
    for directory in directories:
        try:
            names = sorted(p.name for p in directory.iterdir())
        except OSError:
            continue
        exact = f"{given}{SUFFIX}"
        if exact in names:
            return Session.load(directory / exact)
        found += [
            directory / name for name in names if is_session_file(name) and name.startswith(given)
        ]
    if not given or not found:
        raise SessionError(f"no session {given!r} (`assemble sessions list` shows them)")
    if len(found) > 1:
        shown = ", ".join(path.name.removesuffix(SUFFIX) for path in found[:5])
        raise SessionError(f"{given!r} matches {len(found)} sessions ({shown}...); be specific")
    return Session.load(found[0])


def summary_of(session: Session) -> SessionSummary | None:
    """The summary of an open session (None if its file became unreadable)."""
    info = read_info(session.path)
    return summarise(info) if info is not None else None


def _first_user_text(lines: Iterable[bytes | None]) -> str:
    """The text of the first user message in `lines`, or empty when they hold none."""
    for line in lines:
        if line is None or b'"user"' not in line:  # cheap test first: most lines are not
            continue
        entry = _entry(line)
        message = entry.payload.get("message") if entry is not None else None
        if entry is not None and entry.type == "message" and _is_user(message):
            assert isinstance(message, dict)
            return str(message["content"])
    return ""


def _is_user(message: object) -> bool:
    return (
        isinstance(message, dict)
        and message.get("role") == "user"
        and isinstance(message.get("content"), str)
    )


def _entry(line: bytes) -> Entry | None:
    try:
        return Entry.from_record(json.loads(line.decode("utf-8")))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


def _iso(timestamp: float) -> str:
    try:
        moment = datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
