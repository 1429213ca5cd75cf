"""The session files under the directories `assemble view` was given, and the
`SessionFile` of each, kept between requests.

Listing 10,000 sessions must stay well under half a second, so a listing reads only
the directory entries and their times (`os.scandir`); the agent of a session is the
folder it sits in (`sessions/<agent>/`, as `run` writes them). A session's header and
totals are read when its row is shown, and kept: a later request reads only what was
appended. Sessions are named in URLs by their path relative to a root, and a name is
resolved back only to a session file inside that root (no `..`, no link leading
out), so a page can never make the server read another file.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

from assembler.sessions.store import TRACE_SUFFIX
from assembler.view.session_file import SessionFile
from assembler.view.trace_file import TraceFile

SUFFIX = ".jsonl"
MAX_DEPTH = 4
"""How deep below a root sessions are looked for: `<data dir>/sessions/<agent>/x.jsonl`
is three levels, an eval's `NAME.sessions/TASK/x.jsonl` two."""


class Listed(NamedTuple):
    """One session file as a listing sees it before reading it."""

    root: int
    relative: str
    file: str
    folder: str
    modified: float

    @property
    def path(self) -> Path:
        return Path(self.file)

    @property
    def key(self) -> str:
        """The session's name in URLs: `<root index>/<relative path>`."""
        return f"{self.root}/{self.relative}"


def _is_session_name(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.endswith(TRACE_SUFFIX) and not name.startswith(".")


class Catalog:
    """Sessions under `roots` (directories), and the open `SessionFile`s, at most
    `keep` of them (least recently used dropped first)."""

    def __init__(self, roots: list[Path], keep: int = 2000) -> None:
        self.roots = [root.resolve() for root in roots]
        self._open: OrderedDict[Path, tuple[SessionFile, TraceFile]] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()

    def scan(self) -> list[Listed]:
        """Every session file, most recently modified first."""
        found: list[Listed] = []
        for number, root in enumerate(self.roots):
            self._walk(number, str(root), str(root), 0, found)
        found.sort(key=lambda item: (item.modified, item.relative), reverse=True)
        return found

    def _walk(self, number: int, root: str, folder: str, depth: int, out: list[Listed]) -> None:
        # strings, not Paths, and no `relpath`: this runs over every file of the listing
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        skip = len(root) + 1
        name_of_folder = os.path.basename(folder)
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_DEPTH and not name.startswith("."):
                        self._walk(number, root, entry.path, depth + 1, out)
                elif _is_session_name(name) and entry.is_file(follow_symlinks=False):
                    modified = entry.stat(follow_symlinks=False).st_mtime
                    path = entry.path
                    out.append(Listed(number, path[skip:], path, name_of_folder, modified))
            except OSError:
                continue

    def resolve(self, key: str) -> Path | None:
        """The session file a URL names, or None when it names nothing inside a root."""
        number, _, relative = key.partition("/")
        if not number.isdigit() or int(number) >= len(self.roots) or not relative:
            return None
        root = self.roots[int(number)]
        if not _is_session_name(os.path.basename(relative)) or "\x00" in relative:
            return None
        candidate = (root / relative).resolve()
        if not candidate.is_relative_to(root) or not candidate.is_file():
            return None
        return candidate

    def key_of(self, path: Path) -> str | None:
        """The URL name of a session file, when it lies inside a root."""
        resolved = path.resolve()
        for number, root in enumerate(self.roots):
            if resolved.is_relative_to(root) and _is_session_name(resolved.name):
                return f"{number}/{resolved.relative_to(root).as_posix()}"
        return None

    def open(self, path: Path) -> tuple[SessionFile, TraceFile]:
        """The session and its trace, indexed up to now (the index is kept)."""
        with self._lock:
            pair = self._open.get(path)
            if pair is None:
                trace = path.with_name(path.name[: -len(SUFFIX)] + TRACE_SUFFIX)
                pair = (SessionFile(path), TraceFile(trace))
                self._open[path] = pair
                while len(self._open) > self._keep:
                    self._open.popitem(last=False)
            else:
                self._open.move_to_end(path)
        session, trace_file = pair
        session.refresh()
        trace_file.refresh()
        return pair
