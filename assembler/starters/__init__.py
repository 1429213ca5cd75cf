"""Starter projects for `assemble init`.

Each template is a folder of `*.tmpl` files here (package data), written out without
the suffix, with `$name` replaced by the agent's name: a manifest that validates,
renders and runs at once (its model is a `scripted:` replay, with a comment showing
the real providers), plus whatever the template has (a context file, a skill, an
evaluation, sub-agents). Beside them goes a copy of the manifest JSON Schema at
`.assembler/agent.schema.json`, which each manifest's first line names, so editors
complete and check fields outside this repository too, and a `.gitignore` of what
`assemble` writes into a project that is not source (eval results).

Nothing is ever overwritten: when any file to be written exists, nothing is written.
A `.gitignore` already there is the one exception: it is kept as it is (a project has
its own), and `Starter.suggested` lists the lines it lacks.
Nothing is written outside the directory either: a symbolic link on the way to a file
(the directory may be a clone holding any) that leads out of it, or nowhere, is refused
before anything is written. The directory itself may be a link: the user named it.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from assembler.errors import UsageError
from assembler.manifest.schema import schema_text

__all__ = [
    "GITIGNORE",
    "SCHEMA_COPY",
    "TEMPLATES",
    "Starter",
    "agent_name",
    "starter_files",
    "write_starter",
]

TEMPLATES = ("minimal", "coding", "reviewer", "team")
SCHEMA_COPY = ".assembler/agent.schema.json"
"""Where the schema copy goes, relative to the project; the manifests' modelines name it."""
GITIGNORE = ".gitignore"
IGNORED = (
    "eval-results/",  # `assemble eval`'s default results, with their runs' sessions
    "__pycache__/",  # Python tools and extensions compile here when they run
)
_GITIGNORE_TEXT = (
    "# What agent-assembler writes here that is not source: evaluation results (and\n"
    "# the sessions of their runs). A memory store keeps its own .gitignore.\n"
    + "".join(f"{line}\n" for line in IGNORED)
)

_SUFFIX = ".tmpl"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Starter:
    """What `write_starter` wrote: the manifest to start from, and every file."""

    directory: Path
    template: str
    name: str
    files: tuple[Path, ...]
    suggested: tuple[str, ...] = ()
    """Lines the project's own `.gitignore` (kept as it was) lacks."""

    @property
    def manifest(self) -> Path:
        return self.directory / "agent.yaml"


def agent_name(directory: Path) -> str:
    """A valid agent name from a directory's name (`My Project` -> `My-Project`)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", directory.resolve().name).strip("-._")
    return cleaned[:64] if cleaned else "my-agent"


def starter_files(template: str, name: str) -> dict[str, str]:
    """The files of `template` for an agent called `name`: relative path -> text."""
    if template not in TEMPLATES:
        raise UsageError(f"unknown template {template!r}; templates: {', '.join(TEMPLATES)}")
    if not _NAME.fullmatch(name) or len(name) > 64:
        raise UsageError(
            f"invalid agent name {name!r}: letters, digits, `.`, `_` and `-`, "
            "starting with a letter or digit, at most 64 characters"
        )
    files = {
        relative: text.replace("$name", name)
        for relative, text in _walk(resources.files(__name__).joinpath(template), "")
    }
    files[SCHEMA_COPY] = schema_text()
    files[GITIGNORE] = _GITIGNORE_TEXT
    return dict(sorted(files.items()))


def write_starter(directory: Path, template: str, name: str | None = None) -> Starter:
    """Write `template` into `directory` (created if needed); refuse, writing nothing,
    when any of its files already exists there."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory")
    chosen = name if name is not None else agent_name(directory)
    files = starter_files(template, chosen)
    suggested: tuple[str, ...] = ()
    if (directory / GITIGNORE).exists():  # the project's own: kept, never a conflict
        del files[GITIGNORE]
        suggested = _missing_lines(directory / GITIGNORE)
    links = {problem: None for r in files if (problem := _link_problem(directory, r))}
    if links:
        raise UsageError(
            "assemble init writes only inside the directory: "
            + "; ".join(links)
            + "; nothing was written"
        )
    existing = [relative for relative in files if (directory / relative).exists()]
    if existing:
        raise UsageError(
            f"assemble init never overwrites: {directory} already has "
            + ", ".join(existing)
            + "; choose another directory, or move those files away"
        )
    written: list[Path] = []
    made: list[Path] = []  # directories created, outermost first
    try:
        for relative, text in files.items():
            path = directory / relative
            for parent in reversed(path.parents):
                if not parent.exists():
                    parent.mkdir()
                    made.append(parent)
            with path.open("x", encoding="utf-8", newline="\n") as out:  # "x": never replace
                written.append(path)
                out.write(text)
    except OSError as e:
        _undo(written, made)  # all or nothing
        if isinstance(e, FileExistsError):  # appeared since the check above
            raise UsageError(
                f"assemble init never overwrites: {e.filename} appeared meanwhile; "
                "nothing was written"
            ) from e
        raise UsageError(f"assemble init cannot write {e.filename}: {e.strerror or e}") from e
    return Starter(directory, template, chosen, tuple(written), suggested)


def _missing_lines(gitignore: Path) -> tuple[str, ...]:
    """The `IGNORED` lines an existing `.gitignore` does not have (unreadable: all)."""
    try:
        present = {line.strip() for line in gitignore.read_text("utf-8").splitlines()}
    except (OSError, UnicodeDecodeError):
        present = set()
    return tuple(
        line for line in IGNORED if line not in present and line.rstrip("/") not in present
    )


def _undo(written: list[Path], made: list[Path]) -> None:
    """Remove what a refused `write_starter` wrote, newest first."""
    for path in reversed(written):
        path.unlink(missing_ok=True)
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # not empty: someone else's file appeared
            folder.rmdir()


def _link_problem(directory: Path, relative: str) -> str | None:
    """Why writing `relative` in `directory` would follow a link out of it or to nothing
    (`skills is a symbolic link to /elsewhere, outside DIR`), or None."""
    root = directory.resolve()
    current = directory
    for index, part in enumerate(PurePosixPath(relative).parts):
        current = current / part
        shown = "/".join(PurePosixPath(relative).parts[: index + 1])
        if current.is_symlink():
            target = Path(os.path.realpath(current))
            if not target.exists():
                return f"{shown} is a symbolic link to {os.readlink(current)}, which does not exist"
            if not target.is_relative_to(root):
                return f"{shown} is a symbolic link to {target}, outside {directory}"
        elif not current.exists():
            return None  # what is below will be created
    return None


def _walk(folder: Traversable, prefix: str) -> list[tuple[str, str]]:
    """`(relative path without .tmpl, text)` of every template file under `folder`."""
    found: list[tuple[str, str]] = []
    for entry in folder.iterdir():
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.extend(_walk(entry, relative + "/"))
        elif entry.name.endswith(_SUFFIX):
            found.append((relative.removesuffix(_SUFFIX), entry.read_text("utf-8")))
    return found
