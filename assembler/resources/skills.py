"""Agent Skills (https://agentskills.io): find skill folders and check their `SKILL.md`.

The system prompt only lists each skill's name and description (the body is read
when the model activates a skill), so this module reads a `SKILL.md` only up to the
closing `---` of its frontmatter and keeps `Skill` light.

The checks match the reference validator `skills-ref` (agentskills/agentskills,
`skills-ref/src/skills_ref/validator.py` and `parser.py`), whose behaviour is:

- `name`: stripped, then NFKC-normalised; at most 64 characters; `name == name.lower()`;
  every character `str.isalnum()` or `-` (so lowercase Unicode letters such as `навык`
  or `技能` pass, as the reference's tests require); no leading, trailing or double
  hyphen; equal to the NFKC-normalised folder name. All failures are reported at once.
- `description`: a non-blank string of at most 1024 characters (`len`, not bytes).
- `compatibility`: a string of at most 500 characters.
- Allowed fields: name, description, license, allowed-tools, metadata, compatibility.
- The reference parses with strictyaml, which reads every scalar as a string, so
  `version: 1.0` in `metadata` is the string "1.0". We read such scalars back as the
  text written in the file, which gives the same result.

What the reference lets through although the spec says otherwise (unknown fields,
an empty `compatibility`, a `license` or `metadata` value that is not text, a YAML
list for `allowed-tools`, whose spec type is a space-separated string) is a warning
under profile "lenient" and an error under profile "spec". Where we are stricter than
the reference: the frontmatter must open and close with lines that are exactly `---`
(the reference splits the file at the first two `---` anywhere, so `a --- b` in a
description silently cuts it short), a UTF-8 BOM is allowed, and, being plain YAML,
we accept flow collections (`[a, b]`) that strictyaml refuses.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from assembler.errors import Issue, ManifestError
from assembler.manifest.yaml_source import JsonPath, Mark, SourceMap, decode_text, load_yaml_text

MAX_FRONTMATTER_BYTES = 256 * 1024
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
ALLOWED_FIELDS = ("allowed-tools", "compatibility", "description", "license", "metadata", "name")
PROFILES = ("lenient", "spec")
SKILL_FILES = ("SKILL.md", "skill.md")  # the reference accepts the lowercase name too
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
#: Folders one skills directory may hold before the scan stops: `skills: [/]` or `~`
#: would otherwise walk the whole disk on every `validate`.
MAX_SCANNED_FOLDERS = 10_000


@dataclass(frozen=True)
class Skill:
    """What the catalog and the `activate skill` tool need; never the body.

    `name` is NFKC-normalised (it equals the normalised folder name). `allowed_tools`
    keeps the spec's space-separated string (a YAML list is joined with spaces).
    """

    name: str
    description: str
    path: Path
    directory: Path
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    source: str = ""


def parse_skill(
    skill_md: Path,
    *,
    profile: str = "lenient",
    display_root: Path | None = None,
    source: str = "",
) -> tuple[Skill | None, list[Issue]]:
    """Read and check one `SKILL.md`; the `Skill` is returned only if no issue is an error.

    Problems in the file become `Issue`s positioned in the `SKILL.md`; nothing raises
    except an unknown `profile` (a programming error).
    """
    skill, issues, _ = _parse(Path(skill_md), profile, display_root, source)
    return skill, issues


def discover_skills(
    directories: Iterable[Path],
    *,
    profile: str = "lenient",
    explicit: Iterable[Path] = (),
    display_root: Path | None = None,
    source: str = "",
) -> tuple[tuple[Skill, ...], tuple[Issue, ...]]:
    """Load the `explicit` skills (folders or `SKILL.md` files), then scan `directories`.

    A folder holding a `SKILL.md` is a skill and is not searched further (a scanned
    directory may itself be one); hidden folders, `node_modules` and `__pycache__` are
    skipped; folders are visited depth-first in sorted name order, `directories` in the
    given order. Explicit skills come first (source "cli") so a `--skill PATH` wins a
    name collision; the first skill of a name wins and a warning names both files.
    Symlinks: a symlinked folder that is a skill is loaded wherever it points (skill
    managers install skills that way); a symlinked folder that is not a skill is never
    descended into, so a scan cannot loop or wander out of its directory.
    """
    run = _Discovery(profile, display_root)
    for path in explicit:
        run.add(Path(path), "cli", explicit=True)
    for directory in directories:
        run.add(Path(directory), source, explicit=False)
    return tuple(run.skills.values()), tuple(run.issues)


def as_skipped(issues: Iterable[Issue]) -> tuple[Issue, ...]:
    """Skill problems for a run rather than for CI: a skill with an error is left out
    of the agent, so each error becomes a warning that says so (as pi's loader does).
    `assemble validate` keeps them errors."""
    import dataclasses

    return tuple(
        dataclasses.replace(issue, severity="warning", message=f"{issue.message} (skill skipped)")
        if issue.severity == "error"
        else issue
        for issue in issues
    )


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            pass
    return str(path)


def _refuse(file: str, message: str, line: int = 0) -> ManifestError:
    return ManifestError([Issue(file, line, 1 if line else 0, "error", message)])


def _parse(
    skill_md: Path, profile: str, display_root: Path | None, source: str
) -> tuple[Skill | None, list[Issue], Mark | None]:
    if profile not in PROFILES:
        raise ValueError(f"unknown skill profile {profile!r}; expected one of {PROFILES}")
    shown = _display(skill_md, display_root)
    try:
        document = load_yaml_text(_read_frontmatter(skill_md, shown), shown, line_offset=1)
    except ManifestError as e:
        return None, list(e.issues), None
    if not isinstance(document.data, dict):
        what = "a list" if isinstance(document.data, list) else "a single value"
        issue = document.source.issue((), f"frontmatter must be a mapping of fields, not {what}")
        return None, [issue], None
    check = _Check(document.data, document.source, spec=profile == "spec")
    skill = check.run(Path(os.path.abspath(skill_md)), source)
    issues = sorted(check.issues, key=lambda issue: (issue.line, issue.column))
    return skill, issues, document.source.values.get(("name",))


def _is_fence(line: bytes) -> bool:
    return line.removeprefix(b"\xef\xbb\xbf").rstrip() == b"---"


def _read_frontmatter(path: Path, shown: str) -> str:
    """The text between the opening and closing `---` lines; the body is never read."""
    lines: list[bytes] = []
    size = 0
    try:
        with path.open("rb") as handle:
            while size <= MAX_FRONTMATTER_BYTES:
                line = handle.readline(MAX_FRONTMATTER_BYTES + 1 - size)
                lines.append(line)
                size += len(line)
                if not line or _is_fence(line) == (len(lines) > 1):
                    break  # end of file, a first line that is not `---`, or the closing one
    except OSError as e:
        raise _refuse(shown, f"cannot read file: {e.strerror or e}") from None
    head, closed = b"".join(lines), len(lines) > 1 and _is_fence(lines[-1])
    if size > MAX_FRONTMATTER_BYTES:  # cut mid-line: drop a possibly split character
        head = head[:MAX_FRONTMATTER_BYTES].rstrip(bytes(range(0x80, 0x100)))
    decode_text(head, shown)  # a NUL byte or bad UTF-8 fails here, with its position
    if not _is_fence(lines[0]):
        raise _refuse(shown, "SKILL.md must start with YAML frontmatter: a first line `---`", 1)
    if not closed:
        limit = f" within the first {MAX_FRONTMATTER_BYTES // 1024} KiB"
        where = limit if size > MAX_FRONTMATTER_BYTES else ": no `---` line after the first one"
        raise _refuse(shown, f"frontmatter is not closed{where}", 1)
    text = b"".join(lines[1:-1]).decode("utf-8")
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        raise _refuse(shown, "frontmatter is empty; a skill needs `name` and `description`", 1)
    return text


def _text(value: Any, source: SourceMap, path: JsonPath) -> str | None:
    """A scalar as strictyaml (the reference's parser) reads it: the text as written."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return None
    written = source.plain.get(path)
    if written is not None:
        return written
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _key(key: Any) -> str:
    if key is None:
        return "null"
    return str(key).lower() if isinstance(key, bool) else str(key)


def _show(text: str, limit: int = 70) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


class _Check:
    """Validates one frontmatter mapping, collecting every issue (as the reference does)."""

    def __init__(self, data: dict[Any, Any], source: SourceMap, *, spec: bool) -> None:
        self.data = data
        self.source = source
        self.spec = spec
        self.issues: list[Issue] = []

    def error(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        self.issues.append(self.source.issue(path, message, key=key))

    def deviation(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        """Accepted by the reference but against the spec: an error only under "spec"."""
        severity = "error" if self.spec else "warning"
        self.issues.append(self.source.issue(path, message, severity=severity, key=key))

    def run(self, path: Path, source: str) -> Skill | None:
        for key in map(str, self.data):
            if key not in ALLOWED_FIELDS:
                allowed = ", ".join(ALLOWED_FIELDS)
                self.deviation(
                    (key,), f"unknown field {key!r}; the spec allows {allowed}", key=True
                )
        name = self.name(path.parent)
        description = self.string("description", MAX_DESCRIPTION_CHARS, required=True)
        license_ = self.string("license")
        compatibility = self.string("compatibility", MAX_COMPATIBILITY_CHARS)
        allowed_tools = self.allowed_tools()
        metadata = MappingProxyType(self.metadata())
        if name is None or description is None or any(i.severity == "error" for i in self.issues):
            return None
        return Skill(
            name=name,
            description=description.strip(),
            path=path,
            directory=path.parent,
            license=(license_ or "").strip() or None,
            compatibility=compatibility or None,
            allowed_tools=allowed_tools,
            metadata=metadata,
            source=source,
        )

    def string(self, field: str, limit: int = 0, *, required: bool = False) -> str | None:
        """A text field. The reference type-checks only the fields it length-checks, so a
        non-text value of any other field (`license`) is merely a deviation."""
        if field not in self.data:
            if required:
                self.error((), f"missing required field `{field}`")
            return None
        value, where = _text(self.data[field], self.source, (field,)), (field,)
        if value is None or (required and not value.strip()):
            report = self.error if required or limit else self.deviation
            report(where, f"`{field}` must be a {'non-empty ' * required}string")
            return None
        if limit and len(value) > limit:  # counted before stripping, as the reference does
            self.error(where, f"`{field}` is {len(value)} characters; at most {limit} allowed")
        elif limit and not value:
            self.deviation(where, f"`{field}` is empty; the spec wants 1-{limit} characters")
        return value

    def name(self, directory: Path) -> str | None:
        raw = self.string("name", required=True)
        if raw is None:
            return None
        name, where = unicodedata.normalize("NFKC", raw.strip()), ("name",)
        if len(name) > MAX_NAME_CHARS:
            self.error(where, f"`name` is {len(name)} characters; at most {MAX_NAME_CHARS} allowed")
        if name != name.lower():
            self.error(where, f"name {_show(name)} must be lowercase")
        if name.startswith("-") or name.endswith("-"):
            self.error(where, "name must not start or end with a hyphen")
        if "--" in name:
            self.error(where, "name must not contain consecutive hyphens")
        invalid = sorted({c for c in name if not (c.isalnum() or c == "-")})
        if invalid:
            shown = " ".join(repr(c) for c in invalid[:10])
            self.error(where, f"name has invalid characters {shown}; use letters, digits, `-`")
        if unicodedata.normalize("NFKC", directory.name) != name:
            folder = _show(directory.name)
            self.error(where, f"name {_show(name)} must match the folder name {folder}")
        return name

    def allowed_tools(self) -> str | None:
        value, where = self.data.get("allowed-tools"), ("allowed-tools",)
        if value is None or isinstance(value, str):
            return value or None
        if isinstance(value, list):
            items = [_text(item, self.source, (*where, i)) for i, item in enumerate(value)]
            if all(item is not None for item in items):
                joined = " ".join(item for item in items if item)
                self.deviation(
                    where, "`allowed-tools` is a YAML list; the spec wants a space-separated string"
                )
                return joined
        self.deviation(where, "`allowed-tools` must be a space-separated string")
        return None

    def metadata(self) -> dict[str, str]:
        value = self.data.get("metadata")
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.deviation(("metadata",), "`metadata` must map string keys to string values")
            return {}
        result: dict[str, str] = {}
        for key, item in value.items():
            where = ("metadata", str(key))
            text = _text(item, self.source, where)
            if text is None:
                kind = "a list" if isinstance(item, list) else "a mapping"
                self.deviation(where, f"metadata value {str(key)!r} must be a string, not {kind}")
            else:  # keys too as the reference's `str(k)` of strictyaml text, near enough
                result[_key(key)] = text
        return result


class _Discovery:
    """State of one `discover_skills` call: skills by name, issues, files already read."""

    def __init__(self, profile: str, display_root: Path | None) -> None:
        self.profile = profile
        self.root = display_root
        self.skills: dict[str, Skill] = {}
        self.issues: list[Issue] = []
        self.seen: set[tuple[int, int]] = set()
        self.scanned = 0  # folders listed under the current skills directory

    def fail(self, path: Path, message: str) -> None:
        self.issues.append(Issue(_display(path, self.root), severity="error", message=message))

    def add(self, path: Path, source: str, *, explicit: bool) -> None:
        """An explicit skill (folder or SKILL.md file), or a directory to scan."""
        what = "skill path" if explicit else "skills directory"
        try:
            info = path.stat()
        except OSError:
            self.fail(path, f"{what} does not exist")
            return
        found = _skill_file(path) if stat.S_ISDIR(info.st_mode) else None
        if found is not None:
            self.load(*found, source)
        elif explicit and path.name.lower() == "skill.md" and stat.S_ISREG(info.st_mode):
            self.load(path, info, source)
        elif explicit:
            self.fail(path, "skill path is neither a skill folder nor a SKILL.md file")
        elif not stat.S_ISDIR(info.st_mode):
            self.fail(path, "skills directory is not a directory")
        else:
            self.scanned = 0
            self.walk(path, source)
            if self.scanned > MAX_SCANNED_FOLDERS:
                self.fail(
                    path,
                    f"skills directory holds more than {MAX_SCANNED_FOLDERS:,} folders; the "
                    "scan stopped there (point `skills` at the folder that holds the skills)",
                )

    def walk(self, directory: str | Path, source: str) -> None:
        self.scanned += 1
        if self.scanned > MAX_SCANNED_FOLDERS:
            return
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as e:
            self.fail(Path(directory), f"cannot list directory: {e.strerror or e}")
            return
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                continue
            try:
                if not entry.is_dir():
                    continue
                symlink = entry.is_symlink()
            except OSError:
                continue
            found = _skill_file(entry.path)
            if found is not None:
                self.load(*found, source)
            elif not symlink:
                self.walk(entry.path, source)

    def load(self, path: Path, info: os.stat_result, source: str) -> None:
        identity = (info.st_dev, info.st_ino)
        if identity in self.seen:
            return
        self.seen.add(identity)
        skill, issues, mark = _parse(path, self.profile, self.root, source)
        self.issues.extend(issues)
        if skill is None:
            return
        winner = self.skills.get(skill.name)
        if winner is None:
            self.skills[skill.name] = skill
            return
        this, kept = _display(path, self.root), _display(winner.path, self.root)
        line, column = (mark.line, mark.column) if mark else (0, 0)
        message = f"skill {skill.name!r} is defined twice: keeping {kept}, ignoring {this}"
        self.issues.append(Issue(this, line, column, "warning", message, "name"))


def _skill_file(directory: str | Path) -> tuple[Path, os.stat_result] | None:
    for name in SKILL_FILES:
        candidate = os.path.join(directory, name)  # plain strings: pathlib is slow here
        try:
            info = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            return Path(candidate), info
    return None
