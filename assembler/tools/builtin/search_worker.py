"""The work of `grep` and `find` (and of evaluations' `answer_matches`), in a process
of its own that can be killed.

The model writes the regular expression (`grep`) and the glob (`find`, `grep`'s
`glob`), and Python's `re` backtracks: `^(a+)+$` against a line of `a`s and a `b`,
or the glob `*a*a*a*a*a*a*a*a*b` against a long name, runs for hours while holding the
GIL, so neither a thread nor the event loop could stop it and `tool_timeout` did not
hold. Here the whole search (walk, globs, regex) runs in a child process that the
tool kills when the timeout expires or the call is cancelled. The child dies with the
assembler too (`PR_SET_PDEATHSIG`, and end-of-file on its stdin).

Started as `python -I -S -c <WORKER_BOOT> <package root> <parent pid>` by
`search_pool`, and kept for later calls: each request is one JSON line on stdin, each
answer one JSON line on stdout. A search that raises answers `{"failed": "..."}`
(the pool then stops this worker: nothing of a failed search is trusted to be tidy).
`hidden` in a request lists regular expressions over rooted paths
(`/secrets/prod.env`) that the manifest's `read` deny rules keep from the model: such
files are neither searched nor listed, and the answer says how many were left out.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assembler.tools.builtin.sniff import looks_binary
from assembler.tools.builtin.tree import glob_matcher, walk_files

PR_SET_PDEATHSIG = 1


def _hidden(request: dict[str, Any]) -> Callable[[Path], bool]:
    """A test telling whether a file found under the root is hidden: by its own path,
    or, for a link, by the path it leads to (as `read` resolves it)."""
    patterns = [re.compile(p, re.DOTALL) for p in request.get("hidden") or ()]
    root = Path(request["root"])

    def matched(path: Path) -> bool:
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            return False
        return any(p.fullmatch("/" + rel) for p in patterns)

    def hidden(path: Path) -> bool:
        if not patterns:
            return False
        return matched(path) or (path.is_symlink() and matched(Path(os.path.realpath(path))))

    return hidden


def grep(request: dict[str, Any]) -> dict[str, Any]:
    """Matching lines as `path:line: text`, at most `limit` + 1 of them."""
    flags = re.IGNORECASE if request["ignore_case"] else 0
    try:
        regex = re.compile(request["pattern"], flags)
    except re.error as exc:
        return {"error": f"invalid regular expression {request['pattern']!r}: {exc}"}
    root, base = Path(request["root"]), Path(request["base"])
    matches_glob = glob_matcher(request["glob"]) if request["glob"] else None
    limit, max_line, max_file = request["limit"], request["max_line"], request["max_file"]
    files = [base] if base.is_file() else walk_files(root, base)
    found: list[str] = []
    skipped_large = hidden_files = 0
    is_hidden = _hidden(request)
    for path in files:
        rel = path.relative_to(root).as_posix()
        if matches_glob and base.is_dir() and not matches_glob(path.relative_to(base).as_posix()):
            continue
        if is_hidden(path):
            hidden_files += 1
            continue
        try:
            if path.stat().st_size > max_file:
                skipped_large += 1
                continue
            with path.open("rb") as handle:  # a regular file, as `walk_files` found it
                data = handle.read(max_file + 1)
        except OSError:
            continue
        if looks_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            if regex.search(line):
                text = line.rstrip("\r")
                if len(text) > max_line:
                    text = text[:max_line] + "..."
                found.append(f"{rel}:{number}: {text}")
                if len(found) > limit:
                    break
        if len(found) > limit:
            break
    return {"found": found, "skipped_large": skipped_large, "hidden": hidden_files}


def find(request: dict[str, Any]) -> dict[str, Any]:
    """The first `limit` matching paths, sorted, and how many matched in all."""
    matches = glob_matcher(request["pattern"])
    root, base = Path(request["root"]), Path(request["base"])
    is_hidden = _hidden(request)
    matched = [
        path for path in walk_files(root, base) if matches(path.relative_to(base).as_posix())
    ]
    found = sorted(path.relative_to(root).as_posix() for path in matched if not is_hidden(path))
    hidden = len(matched) - len(found)
    return {"paths": found[: request["limit"]], "count": len(found), "hidden": hidden}


def match(request: dict[str, Any]) -> dict[str, Any]:
    """The first match of `pattern` in `text` (an evaluation's `answer_matches`):
    `{"match": [start, matched text]}`, or `{"match": None}`."""
    try:
        found = re.search(request["pattern"], request["text"])
    except re.error as exc:
        return {"error": f"invalid regular expression {request['pattern']!r}: {exc}"}
    return {"match": None if found is None else [found.start(), found.group(0)]}


_OPERATIONS = {"grep": grep, "find": find, "match": match}


def _die_with_parent(parent: int) -> None:
    """Be killed when the assembler dies (Linux); exit now if it already has."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        sys.exit(1)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """One request's answer; an unexpected exception is an answer too."""
    try:
        return _OPERATIONS[request["op"]](request)
    except Exception as e:  # a bug or a MemoryError: say so instead of dying silently
        return {"failed": f"{type(e).__name__}: {e}"}


def main() -> None:
    _die_with_parent(int(sys.argv[2]))
    # A pattern such as `[[a]` makes `re` warn on stderr, which nobody reads.
    warnings.simplefilter("ignore")
    for line in sys.stdin.buffer:  # until the assembler closes the pipe
        sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
        sys.stdout.flush()
