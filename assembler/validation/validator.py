"""Validate manifest files and directories: every problem of every file, one pass.

This is the engine behind `assemble validate` and behind `load_manifest`, so a
manifest that validates is a manifest that loads. It never runs project code: see
`assembler.validation.checks` for what "checking" means here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assembler.errors import Issue
from assembler.manifest.loader import parse_manifest
from assembler.manifest.model import Manifest
from assembler.validation.agent_tree import ROOT, Lineage, check_agent_tree
from assembler.validation.checks import ALL_CHECKS, CheckContext, check_path_names
from assembler.validation.sandbox import check_sandbox

SKILL_FILES = ("SKILL.md", "skill.md")  # as `resources.skills` finds them

MANIFEST_SUFFIXES = (".yaml", ".yml")
EVAL_SUFFIXES = (".eval.yaml", ".eval.yml")
SCHEMA_MARKER = "agent.schema.json"
_SKIPPED_DIRECTORIES = {"node_modules", "__pycache__", "venv"}


@dataclass(frozen=True)
class FileReport:
    """One file's issues, and its manifest when it loaded."""

    path: Path
    issues: tuple[Issue, ...]
    manifest: Manifest | None = None

    @property
    def has_errors(self) -> bool:
        return any(issue.severity == "error" for issue in self.issues)


ReportMemo = dict[tuple[Path, int | None, Path | None], FileReport]
"""Reports of sub-agent manifests already validated in one tree, by file and depth."""


def validate_file(
    path: Path,
    *,
    env: Mapping[str, str] | None = None,
    unset_variables: str = "warning",
    skills_profile: str = "lenient",
    explicit_skills: Sequence[Path] = (),
    display: str | None = None,
    lineage: Lineage = ROOT,
    skill_errors: str = "error",
    memo: ReportMemo | None = None,
) -> FileReport:
    """All issues of one manifest: YAML, schema, then the checks beyond the schema.

    Sub-agent manifests are validated too, with their own issues; `lineage` is the
    chain of manifests above this one when it is itself a sub-agent.
    `skill_errors="warning"` is for `render` and `run`, which leave a broken skill out
    instead of refusing the whole agent.

    `memo` holds the sub-agent reports of one tree, so a manifest that several agents
    of the tree delegate to is validated once per depth, not once per path to it: a
    diamond of 11 files, each naming the next four times, is 11 validations, not 4^10.
    """
    shown = display or display_path(path)
    parsed = parse_manifest(path, env=env, unset_variables=unset_variables, display=shown)
    if parsed.document is None:
        return FileReport(path, parsed.issues)
    if not isinstance(parsed.document.data, dict):
        # One error, in place of the schema's "expected a mapping" at the same spot.
        data = parsed.document.data
        mark = parsed.document.source.locate(())
        message = (
            "empty document; a manifest needs at least `version`, `name` and `identity`"
            if data is None
            else "a manifest is a YAML mapping of keys to values, not "
            + ("a list" if isinstance(data, list) else "a single value")
        )
        return FileReport(path, (Issue(shown, mark.line, mark.column, "error", message),))
    context = CheckContext(
        path=path.resolve(),
        data=parsed.document.data,
        source=parsed.document.source,
        skills_profile=skills_profile,
        explicit_skills=explicit_skills,
        skill_errors=skill_errors,
    )
    issues = list(parsed.issues)
    # A value the schema rejected is not checked again (`module: a-b` is not a module
    # name; "module `a-b` not found" would only repeat that).
    rejected = {i.path for i in parsed.issues if i.severity == "error" and i.path}

    reports: ReportMemo = {} if memo is None else memo

    def validate_child(child: Path, *, lineage: Lineage) -> FileReport:
        key = (child.resolve(), lineage.remaining, lineage.limited_by)
        found = reports.get(key)
        if found is None:
            found = reports[key] = validate_file(
                child,
                env=env,
                unset_variables=unset_variables,
                skills_profile=skills_profile,
                lineage=lineage,
                skill_errors=skill_errors,
                memo=reports,
            )
        return found

    # sub-agents first: the tool names they give this agent are active tools below
    first = (lambda ctx: check_agent_tree(ctx, lineage, validate_child),)
    last = (_check_permissions, lambda ctx: check_sandbox(ctx, lineage.sandbox))
    for check in (*first, *ALL_CHECKS, *last):
        found = [i for i in check(context) if i.file != shown or i.path not in rejected]
        issues.extend(found)
        if check is check_path_names:  # a name no file system takes: nothing more to say
            rejected |= {i.path for i in found}
    unique = sorted(
        set(issues), key=lambda i: (i.file != shown, i.file, i.line, i.column, i.message)
    )
    return FileReport(path, tuple(unique), parsed.manifest)


def _check_permissions(ctx: CheckContext) -> Iterable[Issue]:
    if "permissions" not in ctx.data:
        return ()
    # Imported here for start-up cost: the rule grammar and the pattern compilers
    # behind these checks are for manifests with `permissions:` (issue 21).
    from assembler.validation.permissions import check_permissions

    return check_permissions(ctx)


def display_path(path: Path) -> str:
    """Relative to the current directory when inside it, as editors link best."""
    try:
        absolute = path.absolute()
        return os.path.relpath(absolute) if absolute.is_relative_to(Path.cwd()) else str(path)
    except (ValueError, OSError):
        return str(path)


def find_manifests(paths: Iterable[Path]) -> tuple[list[Path], list[Issue]]:
    """Expand directories into the manifests they hold.

    A file named on the command line is always a manifest. Inside a directory, a
    `*.yaml`/`*.yml` file is one when it declares our schema on its first lines or
    has a top-level `identity:` key; other YAML (CI files, model scripts) is skipped.
    Eval files (`*.eval.yaml`) are always taken; `is_eval_file` tells them apart.
    Hidden directories, `node_modules` and virtual environments are not searched.
    A file reached twice (`agents/` and `agents/a.yaml`) is validated once.
    """
    found: list[Path] = []
    issues: list[Issue] = []
    for path in paths:
        if is_skill_file(path):
            continue  # validated as a skill (`find_skills`)
        if path.is_dir():
            inside = sorted(_walk_yaml(path))
            manifests = [p for p in inside if is_eval_file(p) or _looks_like_manifest(p)]
            if not manifests and not _holds_skills(path):
                issues.append(
                    Issue(
                        display_path(path),
                        0,
                        0,
                        "error",
                        "no agent manifests found in this directory",
                    )
                )
            found.extend(manifests)
        elif path.exists() or path.suffix in MANIFEST_SUFFIXES:
            found.append(path)
        else:
            issues.append(Issue(display_path(path), 0, 0, "error", "no such file or directory"))
    return _unique(found), issues


def is_skill_file(path: Path) -> bool:
    return path.name in SKILL_FILES


def find_skills(paths: Iterable[Path]) -> list[Path]:
    """What on the command line is a skill rather than a manifest: a `SKILL.md`, a
    skill folder, or a directory of skills that holds no manifest. Skills a manifest
    declares are validated with that manifest; these are checked on their own."""
    found: list[Path] = []
    for path in paths:
        if is_skill_file(path) or (
            path.is_dir()
            and _holds_skills(path)
            and not any(_looks_like_manifest(p) for p in _walk_yaml(path))
        ):
            found.append(path)
    return _unique(found)


def validate_skills(path: Path, *, skills_profile: str = "lenient") -> FileReport:
    """Every issue of a `SKILL.md`, or of each skill in a folder, by the same rules a
    manifest's skills are checked with (the Agent Skills specification)."""
    from assembler.resources.skills import discover_skills

    _, issues = discover_skills(
        [] if is_skill_file(path) else [path],
        profile=skills_profile,
        explicit=[path] if is_skill_file(path) else [],
        display_root=Path.cwd(),
    )
    return FileReport(path, tuple(issues))


def count_skills(path: Path) -> int:
    """How many skills a `find_skills` target holds (for the summary line)."""
    return 1 if is_skill_file(path) else sum(1 for _ in _skill_folders(path))


def _holds_skills(directory: Path) -> bool:
    """A skill folder, or a directory with one somewhere below it."""
    return next(_skill_folders(directory), None) is not None


def _skill_folders(directory: Path) -> Iterator[str]:
    """Folders holding a `SKILL.md`; like skill discovery, a skill folder is not
    searched further and hidden folders are skipped."""
    for folder, subdirectories, files in os.walk(directory):
        if any(name in SKILL_FILES for name in files):
            subdirectories[:] = []
            yield folder
        else:
            subdirectories[:] = [
                d for d in subdirectories if not d.startswith(".") and d not in _SKIPPED_DIRECTORIES
            ]


def is_eval_file(path: Path) -> bool:
    """`*.eval.yaml`: an evaluation for `assemble eval`, checked by `assembler.eval`
    (against its own schema, with the agent tree it names), not as a manifest."""
    return path.name.endswith(EVAL_SUFFIXES)


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[str] = set()
    unique: list[Path] = []
    for path in paths:
        key = os.path.normcase(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


def _walk_yaml(root: Path) -> Iterable[Path]:
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(
            d for d in subdirectories if not d.startswith(".") and d not in _SKIPPED_DIRECTORIES
        )
        for name in files:
            if name.endswith(MANIFEST_SUFFIXES) and not name.startswith("."):
                yield Path(directory, name)


def _looks_like_manifest(path: Path) -> bool:
    """The schema modeline on the first lines, or a top-level `identity:` or
    `version:` key (or a near-miss of `identity`, so a typo in it does not make the
    file silently skipped). Special files (FIFOs, devices) are reported, not read."""
    import difflib
    import re
    import stat

    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return True  # validating it reports "not a regular file"
        with path.open("rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return True
    lines = head.decode("utf-8", "replace").splitlines()
    if any(SCHEMA_MARKER in line for line in lines[:3]):
        return True
    keys = {m.group(1) for line in lines if (m := re.match(r"([A-Za-z_][\w-]*)\s*:", line))}
    if keys & {"identity", "version"}:
        return True
    return bool(difflib.get_close_matches("identity", list(keys), n=1, cutoff=0.75))
