"""Walking the workspace tree and matching globs, for `grep` and `find`.

`pathlib.Path.glob` follows symlinks out of the workspace and, before Python 3.13,
has no way to match `**` against a relative path string, so both are done here: the
walk never descends a directory symlink and drops file symlinks that lead outside, and
globs are translated to regular expressions once.

Only the standard library is imported: the search worker
process imports this module, and its start-up is paid on every `grep` and `find`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

#: Version-control directories: huge, never what the model is looking for.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for `/`-separated relative paths; `**` spans directories, `*` does not.

    A pattern without `/` (`*.py`) is matched against the file name at any depth, as
    `find -name` does; one with `/` (`src/**/*.py`) against the whole relative path.
    """
    pattern = pattern.removeprefix("./")
    regex = re.compile(_glob_to_regex(pattern), re.DOTALL)
    if "/" in pattern:
        return lambda rel: regex.fullmatch(rel) is not None
    return lambda rel: regex.fullmatch(rel.rsplit("/", 1)[-1]) is not None


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def walk_files(root: Path, base: Path) -> Iterator[Path]:
    """Files under `base` in path order, skipping VCS dirs and links leaving `root`.

    Entries are visited sorted by name with directories in place (`a.txt`, `b/c.txt`,
    `d.txt`), so output order is stable and read like a listing. Directory symlinks are
    never descended (no loops, no escapes); file symlinks are kept only when their
    target is a file inside the workspace. Unreadable directories are skipped.
    """
    stack = [base]  # directories still to visit, next one last
    pending: list[list[os.DirEntry[str]]] = []
    while stack or pending:
        if stack:
            try:
                with os.scandir(stack.pop()) as scan:
                    pending.append(sorted(scan, key=lambda entry: entry.name, reverse=True))
            except OSError:
                pass
            continue
        if not pending[-1]:
            pending.pop()
            continue
        entry = pending[-1].pop()
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIPPED_DIRS:
                stack.append(path)
        elif entry.is_symlink():
            if is_inside(root, path) and path.is_file():
                yield path
        elif entry.is_file(follow_symlinks=False):
            yield path


def is_inside(root: Path, path: Path) -> bool:
    """Whether `path` (already absolute) resolves to somewhere inside `root` (resolved).

    Used by directory walks to skip symlinks that escape, without raising.
    """
    try:
        return Path(os.path.realpath(path)).is_relative_to(root)
    except (OSError, ValueError):
        return False
