"""What every check beyond the schema shares: the document being checked, and
path probes that never raise.

The checks read the raw document (they also run when the schema found errors
elsewhere), so every accessor here is defensive: `items` of something that is not a
list is empty, and `is_dir` of a name too long for the file system is False (Python
3.11's `Path.is_dir` raises there).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.errors import Issue
from assembler.manifest.yaml_source import JsonPath, SourceMap, format_path


@dataclass
class CheckContext:
    """What every check needs: the document, where it lives, and how strict to be."""

    path: Path
    data: Mapping[str, Any]
    source: SourceMap
    skills_profile: str = "lenient"
    explicit_skills: Sequence[Path] = ()
    skill_errors: str = "error"
    skills: tuple[Any, ...] = field(default=())
    subagent_tools: list[str] = field(default_factory=list)
    """Tool names the manifest's sub-agents give it (filled by `check_agent_tree`)."""

    @property
    def base(self) -> Path:
        return self.path.parent

    def issue(self, path: JsonPath, message: str, severity: str = "error") -> Issue:
        return self.source.issue(path, message, severity=severity)

    def resolve(self, relative: str) -> Path:
        return Path(os.path.normpath(self.base / os.path.expanduser(relative)))

    def workspace(self) -> Path:
        raw = self.data.get("workspace", ".")
        return self.resolve(raw if isinstance(raw, str) else ".")

    def python_roots(self) -> list[Path]:
        return [root for root in (self.base, self.workspace()) if is_dir(root)]


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def is_dir(path: Path) -> bool:
    """`Path.is_dir` that answers False where Python 3.11 raises (a name too long)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def exists(path: Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def dir_state(path: Path) -> str:
    """Why a directory is not usable: `is not a directory` or `does not exist`."""
    return "is not a directory" if exists(path) else "does not exist"


def fmt(path: JsonPath) -> str:
    return format_path(path)


def display(path: Path) -> str:
    """A path as users want to read it: relative to the current directory if inside."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (ValueError, OSError):
        return str(path)
