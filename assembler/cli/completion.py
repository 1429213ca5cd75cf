"""Tab completion in the interactive session: `/commands` at the start of a line, and
`@path` mentions of the workspace's files anywhere in it.

readline asks `Completer.complete(text, state)` for the word under the cursor (words
end at whitespace only, so `@src/app.py` is one word) and calls it again with
`state` 1, 2 ... for further candidates, until it returns None. Paths are listed from
the workspace only: a mention that leads out of it (`@../`, `@/etc/`) completes to
nothing, as `@path` would attach nothing from there. Hidden entries are offered only
once the word asks for them (`@.`). Directories end in `/`, so Tab goes on into them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

MAX_CANDIDATES = 200
"""A directory with more entries offers the first ones, in name order."""


class Completer:
    """Candidates for `commands()` (names without the slash) and the files of
    `workspace`; `line()` is the whole line typed so far (readline's buffer)."""

    def __init__(
        self,
        workspace: Path,
        commands: Callable[[], Iterable[str]],
        line: Callable[[], str] = str,
    ) -> None:
        self.workspace = workspace
        self.commands = commands
        self.line = line  # `LineReader.open` gives readline's buffer
        self._matches: list[str] = []

    def complete(self, text: str, state: int) -> str | None:
        if state == 0:
            self._matches = self.candidates(text, self.line())
        return self._matches[state] if state < len(self._matches) else None

    def candidates(self, text: str, line: str) -> list[str]:
        """Every completion of the word `text` in `line`."""
        if text.startswith("@"):
            return ["@" + path for path in workspace_paths(self.workspace, text[1:])]
        if text.startswith("/") and line.lstrip() == text:  # the first word: a command
            names = sorted(set(self.commands()))
            return [f"/{name} " for name in names if name.startswith(text[1:])]
        return []


def workspace_paths(workspace: Path, typed: str) -> list[str]:
    """The workspace paths starting with `typed` (relative to the workspace)."""
    folder, _, start = typed.rpartition("/")
    root = Path(os.path.realpath(workspace))
    directory = Path(os.path.realpath(root / folder)) if folder else root
    if not directory.is_relative_to(root):
        return []
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return []
    found = []
    prefix = f"{folder}/" if folder else ""
    for entry in entries:
        hidden = entry.name.startswith(".") and not start.startswith(".")
        if hidden or not entry.name.startswith(start):
            continue
        try:
            is_directory = entry.is_dir()
        except OSError:
            continue
        found.append(prefix + entry.name + ("/" if is_directory else ""))
        if len(found) >= MAX_CANDIDATES:
            break
    return found
