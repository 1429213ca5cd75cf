"""Where context files are found without being listed: the way pi, Codex and Claude
Code find `AGENTS.md` (and `CLAUDE.md`, when the manifest names it).

Looked for, in this order (outermost first, so the nearer file is read last and
weighs most, as in those tools):

1. the user's file in the config directory (`<config dir>/AGENTS.md`, `user`);
2. each directory from the repository root down to the workspace's parent
   (`parents`): the repository root is the nearest directory holding `.git`, from
   the workspace up; outside a repository there are no parents to look in;
3. the workspace itself.

Only these files are read outside the workspace, and only as prompt text: nothing
found here runs. A file must stay inside the directory it was found in (a link out of
it is skipped with a warning), must be a regular file, and is cut at
`limits.context_file_max_bytes` like any context file (`loader`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from assembler.manifest.model import ContextDiscovery

Origin = Literal["user", "parent", "workspace"]


@dataclass(frozen=True)
class Candidate:
    """A place a context file may be: `shown` heads it in the prompt."""

    shown: str
    path: Path
    origin: Origin

    @property
    def directory(self) -> Path:
        """The directory it was found in, which it must stay inside."""
        return self.path.parent


def repository_root(workspace: Path) -> Path | None:
    """The nearest directory holding `.git` (a directory, or a work tree's file),
    from `workspace` (resolved) up; None outside a repository."""
    for directory in (workspace, *workspace.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def candidates(workspace: Path, discovery: ContextDiscovery, config_dir: Path) -> list[Candidate]:
    """Every path to look at, in the order the prompt shows what exists."""
    found: list[Candidate] = []
    if discovery.user:
        found += [
            Candidate(_user_shown(config_dir / n), config_dir / n, "user") for n in discovery.names
        ]
    root = repository_root(workspace) if discovery.parents else None
    directories = [workspace]
    if root is not None and root != workspace:
        directories = [p for p in reversed(workspace.parents) if p.is_relative_to(root)]
        directories.append(workspace)
    for directory in directories:
        origin: Origin = "workspace" if directory == workspace else "parent"
        for name in discovery.names:
            path = directory / name
            shown = name if origin == "workspace" else os.path.relpath(path, workspace)
            found.append(Candidate(shown, path, origin))
    return found


def _user_shown(path: Path) -> str:
    """`~/...` for a file under the home directory: the prompt need not name the user."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
