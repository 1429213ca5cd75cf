"""Answers read from the file system, kept while the paths they were read from are unchanged.

Each answer is kept with the paths it depended on and what `stat` said of each when
it was computed: (device, inode, mtime_ns), or None for a path that did not exist.
Asked again with the same key, the cache returns the answer when every path still
stats the same, and computes it again otherwise. A directory's mtime changes when an
entry is added, removed or renamed in it, so an answer that depends on which files a
directory holds (where Python would find a module) is recomputed when that changes;
`stat` follows symbolic links, so a link pointed elsewhere shows as another inode.
Changes within one tick of the file system's clock can go unseen, the limit Python's
own import caches (`FileFinder`) accept too.

A few microseconds per path against the hundreds a fresh search costs: `render` with
1,000 Python tools from one module asked where that module is 2,000 times.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

V = TypeVar("V")

_Stamp = tuple[tuple[int, int, int] | None, ...]


def stamp_of(paths: Sequence[str]) -> _Stamp:
    """(device, inode, mtime_ns) of each path, None where it cannot be stated."""
    stamps: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            stamps.append(None)
        else:
            stamps.append((info.st_dev, info.st_ino, info.st_mtime_ns))
    return tuple(stamps)


class StampedCache(Generic[V]):
    """Answers by key, least recently used dropped first past `max_entries`."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self.computed = 0  # answers computed (not reused), for tests and benchmarks
        self._entries: OrderedDict[Hashable, tuple[tuple[str, ...], _Stamp, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], tuple[V, Sequence[str] | None]]) -> V:
        """The kept answer for `key` while its paths are unchanged, else `compute()`:
        the answer and the paths it depends on (None: do not keep it).

        Which paths matter is known only after computing, so a new answer is computed
        twice, around the stating of its paths, and kept only when both agree: a change
        made while the first computation ran is then either seen by the second or
        shows in the stamps next time, never kept as current. (Twice per new answer,
        once per key: `render` asks about one module a thousand times.)"""
        with self._lock:
            kept = self._entries.get(key)
        if kept is not None:
            paths, stamp, value = kept
            if stamp_of(paths) == stamp:
                with self._lock:
                    if key in self._entries:
                        self._entries.move_to_end(key)
                return value
        value, depends_on = compute()
        with self._lock:
            self.computed += 1
        if depends_on is None:
            return value
        paths = tuple(depends_on)
        stamp = stamp_of(paths)
        again, depends_again = compute()
        if depends_again is None or tuple(depends_again) != paths or again != value:
            return again
        with self._lock:
            self._entries[key] = (paths, stamp, again)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return again

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def module_search_paths(
    searched: Sequence[str], path: Path | None, top: Path | None, problem: str
) -> list[str] | None:
    """The paths that decided where a module search found `path` (its top-level module
    or package at `top`): the directories searched up to the one holding `top` (a
    module added to an earlier one would shadow it; a later one cannot), the package
    directories from `top` down to the file, and the file. None (do not keep the
    answer) when nothing was found, or for a namespace package, whose portions any
    directory may add to."""
    if problem and path is None:
        return None
    if path is None:
        return list(searched)  # built in, frozen
    if top is None:
        return None
    chain: list[str] = []
    if top != path:
        if not path.is_relative_to(top) or not (top / "__init__.py").is_file():
            return None
        chain = [str(parent) for parent in path.parents if parent.is_relative_to(top)]
    holder = str(top.parent)
    found_in = next(
        (i for i, entry in enumerate(searched) if os.path.abspath(entry) == holder),
        len(searched) - 1,
    )
    return [*searched[: found_in + 1], *chain, str(path)]
