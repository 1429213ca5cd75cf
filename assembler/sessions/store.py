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
* Whole-file writes (new sessions and forks; nothing ever rewrites a session) go
  through a temporary file in the same directory, `fsync`, `os.replace` and an `fsync`
  of the directory, so a reader sees no file or a whole one, never half of one.

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
is ISO-8601 UTC with milliseconds. Entry types written today (docs/sessions.md has the
table with every field):

* ``message``: one conversation turn, ``{"message": message_to_dict(msg)}``, plus
  ``"usage": usage_to_dict(u)`` after an assistant response.
* ``event``: a run's start (``{"type": "run_start", "prompt"}``) and its ``run_end``
  (`Session.append_run_start`, `append_run_end`: the one writer of both).
* ``compaction``: a summary standing for the entries before ``first_kept``; they stay
  in the file (see `Session.append_compaction` and `sessions.context`).
* ``subagent``: a sub-agent call's own session (its id, file and trace file), written
  with the child's session by `Session.delegate`.

Readers skip types they do not know; the audit trace of tool calls has its own file
(`<id>.trace.jsonl`, `sessions.trace`).
"""

from __future__ import annotations

import builtins
import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from assembler.errors import SessionError
from assembler.messages import Message, Usage
from assembler.sessions.codec import message_to_dict, usage_to_dict
from assembler.sessions.context import Context, build_context
from assembler.sessions.paths import default_session_dir
from assembler.sessions.records import (
    ENTRY_KEYS,
    FORMAT_VERSION,
    HEADER_KEYS,
    HEADER_TYPE,
    SUFFIX,
    Entry,
    SessionInfo,
    append_line,
    encode_record,
    new_entry_id,
    new_session_id,
    read_info,
    read_session_file,
    utc_now,
    write_atomic,
)
from assembler.sessions.tree import TreeNode, entry_tree


class _Default(enum.Enum):
    LEAF = "leaf"


LEAF: Final = _Default.LEAF
"""Default `parent_id` of `Session.append`: hang the entry from the current leaf."""


class Session:
    """One open session file. Cheap to keep: it holds no descriptor between writes.

    Each append opens the file anew, so nothing needs closing and another process
    may append to the same file.
    """

    def __init__(self, path: Path, header: Mapping[str, Any], leaf: str | None = None) -> None:
        self.path = path
        self.header: Mapping[str, Any] = dict(header)
        self.leaf = leaf
        self.skipped = 0
        """Bad lines skipped by the last `entries()` (or by opening the session)."""
        self._read: tuple[tuple[int, int, int], list[Entry]] | None = None

    @classmethod
    def load(cls, path: Path) -> Session:
        """Open an existing session file; the leaf is the last entry in it."""
        session = cls(path, {})
        entries = session.entries()
        session.header = session._header
        session.leaf = entries[-1].id if entries else None
        return session

    @property
    def id(self) -> str:
        return str(self.header["id"])

    @property
    def trace_path(self) -> Path:
        """The audit trace of this session's tool calls, beside it (`<id>.trace.jsonl`)."""
        return self.path.with_name(self.path.name.removesuffix(SUFFIX) + TRACE_SUFFIX)

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
        entry = Entry(new_entry_id(), parent, type, utc_now(), payload)
        append_line(self.path, encode_record(entry.to_record(), what=f"the {type!r} entry"), fsync)
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
        """Every readable entry in file order; bad lines are counted in `skipped`.

        The file is read again only when it changed since the last read (an append,
        here or by another process, changes its size and mtime): opening a session and
        building its conversation read it once."""
        try:
            info = self.path.stat()
        except OSError:
            info = None
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns) if info is not None else None
        if stamp is not None and self._read is not None and self._read[0] == stamp:
            return list(self._read[1])
        self._header, entries, self.skipped = read_session_file(self.path)
        if stamp is not None:
            self._read = (stamp, entries)
        return list(entries)

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

    def context(self, leaf_id: str | None = None) -> Context:
        """The conversation along root..leaf as the next request carries it: the
        latest compaction applied, and every tool call answered (see `context`)."""
        return build_context(self.branch(leaf_id), self.id)

    def messages(self, leaf_id: str | None = None) -> list[Message]:
        """The messages of `context(leaf_id)`."""
        return list(self.context(leaf_id).messages)

    def append_compaction(
        self, summary: str, first_kept: str | None, *, tokens_before: int = 0, reason: str = ""
    ) -> Entry:
        """Record that the entries before `first_kept` are replaced by `summary`.

        Nothing is rewritten: the compacted entries stay in the file, and `context()`
        starts from the summary."""
        return self.append(
            "compaction",
            {
                "summary": summary,
                "first_kept": first_kept,
                "tokens_before": tokens_before,
                "reason": reason,
            },
            fsync=True,
        )

    # -- what a run writes besides its messages (docs/sessions.md has the fields) ----

    def append_run_start(self, prompt: str, *, params: Mapping[str, Any] | None = None) -> Entry:
        """The start of one prompt's run; `params`: the values of the agent's
        parameters it runs with (an agent without parameters records none)."""
        event: dict[str, Any] = {"type": "run_start", "prompt": prompt}
        if params is not None:
            event["params"] = dict(params)
        return self.append("event", {"event": event})

    def append_run_end(
        self, end: Mapping[str, Any], workspace_end: Mapping[str, Any] | None = None
    ) -> Entry:
        """The end of a run: its `run_end` event as `assemble run --json` prints it, and
        the files that differ from the start (`workspace_record.record_end`), when given."""
        payload: dict[str, Any] = {"event": dict(end)}
        if workspace_end is not None:
            payload["workspace_end"] = dict(workspace_end)
        return self.append("event", payload)

    def delegate(
        self,
        *,
        agent: str,
        manifest: Path | None,
        model: str,
        workspace: Path,
        call: Mapping[str, str],
    ) -> Session:
        """A sub-agent's session for the tool call `call` of this one (`call_id`, `tool`,
        `agent_path`, and `entry`, the entry holding the call), beside this file and
        linked both ways: its header's `delegated_from` names this session and the call,
        and this session gets a `subagent` entry naming the child's files."""
        origin = {
            "session": self.id,
            "entry": call.get("entry", ""),
            "call_id": call.get("call_id", ""),
            "tool": call.get("tool", ""),
            "agent_path": call.get("agent_path", ""),
            "session_file": str(self.path),
        }
        store = SessionStore(self.path.parent)
        child = store.start(
            agent=agent, manifest=manifest, model=model, workspace=workspace, delegated_from=origin
        )
        self.append(
            "subagent",
            {
                "call_id": origin["call_id"],
                "tool": origin["tool"],
                "agent_path": origin["agent_path"],
                **child.link(),
            },
        )
        return child

    def link(self) -> dict[str, str]:
        """How another record names this session: its id, file and trace file."""
        return {
            "session": self.id,
            "session_file": str(self.path),
            "trace_file": str(self.trace_path),
        }

    def tree(self) -> list[TreeNode]:
        """Every entry as a tree (roots first, children in file order), for navigation:
        branches come from forks in place, retries and steering from earlier points."""
        return entry_tree(self.entries())

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


TRACE_SUFFIX: Final = ".trace.jsonl"


def is_session_file(name: str) -> bool:
    """A session file's name, not the audit trace written beside it."""
    return name.endswith(SUFFIX) and not name.endswith(TRACE_SUFFIX)


class SessionStore:
    """The session files of one directory (usually one agent's).

    Sessions come from its named constructors: `start` (a new run's session),
    `Session.delegate` (a sub-agent's, beside its parent's), `Session.fork` (a copy of
    a branch), `open` (an existing one) and `latest` (the one `--continue` resumes);
    `create` is the plain file with a header, for other tools.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def for_agent(cls, agent: str, directory: Path | None = None) -> SessionStore:
        """Where `agent`'s sessions go: `directory` when given (`--session-dir`), else
        `<data dir>/sessions/<agent>`."""
        return cls(directory if directory is not None else default_session_dir(agent))

    def __repr__(self) -> str:
        return f"SessionStore({str(self.directory)!r})"

    def start(
        self,
        *,
        agent: str,
        manifest: Path | None,
        model: str,
        workspace: Path,
        delegated_from: Mapping[str, str] | None = None,
        workspace_start: Mapping[str, Any] | None = None,
    ) -> Session:
        """A new, empty session of an agent run: the header names the agent, its
        manifest, the model (`provider:name`) and the workspace it works in, and where
        that workspace started (`workspace_record.record_start`) when given."""
        metadata: dict[str, Any] = {"workspace": str(workspace)}
        if workspace_start is not None:
            metadata["workspace_start"] = dict(workspace_start)
        if delegated_from is not None:
            metadata["delegated_from"] = dict(delegated_from)
        return self.create(agent=agent, manifest=manifest, model=model, metadata=metadata)

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
            if not is_session_file(path.name):
                continue
            info = read_info(path)
            if info is not None:
                infos.append(info)
        infos.sort(key=lambda info: (info.modified, info.created, info.id), reverse=True)
        return infos

    def latest(
        self, *, agent: str | None = None, workspace: Path | None = None
    ) -> SessionInfo | None:
        """The session written most recently (of `agent`, in `workspace`, when given;
        a session that names no workspace is in every one). With both, it is what
        `--continue` resumes: a session of the same agent on another checkout is not
        this work."""
        where = str(workspace) if workspace is not None else None
        for info in self.list():
            if agent is not None and info.agent != agent:
                continue
            if where is not None and info.header.get("workspace") not in (where, None):
                continue
            return info
        return None

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
            "created": utc_now(),
            **extra,
            **metadata,
        }
        write_atomic(path, header, entries, replace=False)
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
        matches = [n for n in names if is_session_file(n) and given and n.startswith(given)]
        if len(matches) == 1:
            return self.directory / matches[0]
        if not matches:
            raise SessionError(f"no session {given!r} in {self.directory}")
        shown = ", ".join(name.removesuffix(SUFFIX) for name in matches[:5])
        raise SessionError(f"{given!r} matches {len(matches)} sessions ({shown}...); be specific")
