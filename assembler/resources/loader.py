"""One consistent snapshot of everything the agent reads from disk.

`ResourceLoader.reload()` reads context files, skills, template overrides and the
extension declarations in one go and returns an immutable `ResourceSnapshot`. The
tool registry and the prompt are built from the same snapshot (DESIGN.md section
3), so a reload can never leave the prompt describing one set of resources while the
registry holds another.

Each `no_*` flag switches off its own source only. Recoverable problems (a missing
context file, a skill with a bad name, a name collision) become diagnostics in the
snapshot rather than exceptions: an agent with one broken skill still runs, and
`render` shows why that skill is missing.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from assembler.errors import Issue
from assembler.manifest.loader import read_template_file
from assembler.manifest.model import ExtensionSpec, Manifest, TemplateOverride
from assembler.resources.discovery import candidates
from assembler.resources.skills import Skill, as_skipped, discover_skills
from assembler.user_dirs import default_config_dir


@dataclass(frozen=True)
class ContextFile:
    """A project context file as the prompt shows it."""

    path: str
    absolute: Path
    content: str
    truncated: bool = False
    origin: str = "workspace"
    """`workspace`, `parent` (a directory up to the repository root) or `user` (the
    config directory): where it was found (`discovery`)."""

    @property
    def source(self) -> str:
        """How `render` and the session name where it came from."""
        if self.origin == "workspace":
            return f"context file: {self.path}"
        return f"context file: {self.path} ({self.origin}: {self.absolute})"


@dataclass(frozen=True)
class LoaderFlags:
    """Switch off one source each; `explicit_skills` load even with `no_skills`."""

    no_skills: bool = False
    no_context_files: bool = False
    no_prompt_templates: bool = False
    no_extensions: bool = False
    explicit_skills: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ResourceSnapshot:
    """Everything a build reads from files, taken once (`ResourceLoader.reload`)."""

    context_files: tuple[ContextFile, ...] = ()
    skills: tuple[Skill, ...] = ()
    templates: Mapping[str, TemplateOverride] = field(default_factory=lambda: MappingProxyType({}))
    extensions: tuple[ExtensionSpec, ...] = ()
    diagnostics: tuple[Issue, ...] = ()


# Characters that change what a reader sees without being visible themselves.
_INVISIBLE = {
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\u2061", "\u2062",
    "\u2063", "\u2064", "\ufeff", "\u00ad", "\u180e",
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
    "\u2066", "\u2067", "\u2068", "\u2069",
}  # fmt: skip


class ResourceLoader:
    """Reads a manifest's resources; `snapshot` is the result of the last reload."""

    def __init__(self, manifest: Manifest, flags: LoaderFlags | None = None) -> None:
        self.manifest = manifest
        self.flags = flags or LoaderFlags()
        self.snapshot = ResourceSnapshot()

    def reload(self) -> ResourceSnapshot:
        diagnostics: list[Issue] = []
        flags = self.flags
        context_files = () if flags.no_context_files else self._context_files(diagnostics)
        skills = self._skills(diagnostics)
        templates = {} if flags.no_prompt_templates else self._templates(diagnostics)
        extensions = () if flags.no_extensions else self.manifest.extensions
        self.snapshot = ResourceSnapshot(
            context_files=context_files,
            skills=skills,
            templates=MappingProxyType(templates),
            extensions=extensions,
            diagnostics=tuple(diagnostics),
        )
        return self.snapshot

    def _templates(self, diagnostics: list[Issue]) -> dict[str, TemplateOverride]:
        """The manifest's overrides; a `file:` override is read again, so a reload sees
        the template as it is now, like the context files and skills beside it."""
        templates: dict[str, TemplateOverride] = {}
        for section, override in self.manifest.prompt.items():
            if override.file is not None:
                roots = (self.manifest.directory, self.manifest.workspace)
                text, problem = read_template_file(override.file, roots)
                if text is None:
                    diagnostics.append(
                        Issue(
                            str(override.file),
                            0,
                            0,
                            "warning",
                            f"template file cannot be read ({problem}); using the text read "
                            "at load",
                        )
                    )
                else:
                    templates[section] = dataclasses.replace(override, text=text)
                    continue
            templates[section] = override
        return templates

    def _skills(self, diagnostics: list[Issue]) -> tuple[Skill, ...]:
        directories: Sequence[Path] = () if self.flags.no_skills else self.manifest.skills
        existing = []
        for directory in directories:
            if _is_dir(directory):
                existing.append(directory)
            else:
                diagnostics.append(
                    Issue(str(directory), 0, 0, "warning", "skill directory does not exist")
                )
        if not existing and not self.flags.explicit_skills:
            return ()
        skills, issues = discover_skills(existing, explicit=self.flags.explicit_skills)
        diagnostics.extend(as_skipped(issues))
        return tuple(skills)

    def _context_files(self, diagnostics: list[Issue]) -> tuple[ContextFile, ...]:
        """The discovered files (`discovery`), then the manifest's `context_files` when
        it declares them (without a file read twice)."""
        manifest = self.manifest
        loaded = self._discovered(diagnostics)
        if manifest.context_discovery is None or manifest.context_files_declared:
            seen = {f.absolute for f in loaded}
            loaded += [f for f in self._listed(diagnostics) if f.absolute not in seen]
        return tuple(loaded)

    def _discovered(self, diagnostics: list[Issue]) -> list[ContextFile]:
        manifest = self.manifest
        discovery = manifest.context_discovery
        if discovery is None:
            return []
        workspace = manifest.workspace.resolve()
        limit = manifest.limits.context_file_max_bytes
        loaded: list[ContextFile] = []
        seen: set[Path] = set()
        for found in candidates(workspace, discovery, default_config_dir()):
            if not _is_file(found.path):
                continue  # nothing there: discovery looks, it does not require
            # The directories are real paths already (found from the resolved
            # workspace, the resolved config directory): only the file itself can be a
            # link, and only a link is resolved (resolving each deep path costs a
            # system call per directory above it)
            path: Path | None = found.path
            if os.path.islink(found.path):
                try:
                    path = found.path.resolve()
                except (OSError, RuntimeError):
                    path = None
            if path is None or not path.is_relative_to(found.directory):
                diagnostics.append(
                    Issue(
                        str(found.path),
                        0,
                        0,
                        "warning",
                        "context file links out of its directory; skipped",
                    )
                )
                continue
            if path in seen:
                continue  # CLAUDE.md linked to AGENTS.md: read once
            seen.add(path)
            try:
                read = self._read_context_file(found.shown, path, limit, diagnostics)
            except OSError as e:
                diagnostics.append(
                    Issue(
                        str(found.path),
                        0,
                        0,
                        "warning",
                        f"context file cannot be read ({e}); skipped",
                    )
                )
                continue
            loaded.append(dataclasses.replace(read, origin=found.origin))
        return loaded

    def _listed(self, diagnostics: list[Issue]) -> list[ContextFile]:
        manifest = self.manifest
        workspace = manifest.workspace.resolve()
        limit = manifest.limits.context_file_max_bytes
        loaded: list[ContextFile] = []
        for index, name in enumerate(manifest.context_files):
            try:
                path = Path(os.path.normpath(workspace / name)).resolve()
            except (OSError, RuntimeError) as e:  # a symlink loop, a name too long
                reason = "a symbolic link loop" if isinstance(e, RuntimeError) else e.strerror
                diagnostics.append(
                    self._entry_issue(index, name, f"cannot be resolved ({reason}); skipped")
                )
                continue
            if not path.is_relative_to(workspace):
                diagnostics.append(
                    self._entry_issue(index, name, "is outside the workspace; skipped")
                )
                continue
            if not _is_file(path):
                if manifest.context_files_declared:
                    diagnostics.append(self._entry_issue(index, name, "not found in the workspace"))
                continue
            try:
                loaded.append(self._read_context_file(name, path, limit, diagnostics))
            except OSError as e:
                diagnostics.append(self._entry_issue(index, name, f"cannot be read ({e}); skipped"))
        return loaded

    def _entry_issue(self, index: int, name: str, problem: str) -> Issue:
        """A warning about the manifest's `context_files[index]`, placed where the
        manifest declares it when that is known, with the words `validate` uses
        (`context file NAME not found in the workspace`): a command that validated
        first then shows the same warning once, not twice in two forms."""
        source = self.manifest.source
        if source is None:
            return Issue(name, 0, 0, "warning", f"context file {problem}")
        # the default `AGENTS.md` is declared by the workspace (or the file, without one)
        at = ("context_files", index) if self.manifest.context_files_declared else ("workspace",)
        return source.issue(at, f"context file {name} {problem}", severity="warning")

    def _read_context_file(
        self, name: str, path: Path, limit: int, diagnostics: list[Issue]
    ) -> ContextFile:
        # Opened without blocking and checked on the descriptor: a FIFO swapped in for
        # the file after the check above must not hang the build.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            raw = handle.read(limit + 1)
        truncated = len(raw) > limit
        if truncated:
            raw = raw[:limit]
            diagnostics.append(
                Issue(
                    name,
                    0,
                    0,
                    "warning",
                    f"context file is larger than {limit:,} bytes; the prompt shows the first {limit:,}",
                )
            )
        text = raw.decode("utf-8", errors="ignore" if truncated else "replace")
        for line_number, line in enumerate(text.splitlines(), 1):
            hidden = sorted({c for c in line if c in _INVISIBLE or _is_tag_character(c)})
            if hidden:
                codes = ", ".join(
                    f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in hidden
                )
                diagnostics.append(
                    Issue(
                        name,
                        line_number,
                        0,
                        "warning",
                        f"invisible or bidirectional control characters ({codes}): the model reads "
                        "text a reviewer may not see",
                    )
                )
        return ContextFile(name, path, text.rstrip("\n"), truncated)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _is_tag_character(char: str) -> bool:
    return 0xE0000 <= ord(char) <= 0xE007F
