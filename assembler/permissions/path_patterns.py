"""Path patterns for the file tools: `src/**`, `tests/*.py`, `*.env`.

Patterns are relative to the workspace and `/`-separated, as the `find` tool's globs
are: `*` and `?` stay inside one path segment, `**` spans any number of segments
(none included, so `src/**` also matches `src` itself), `[abc]` is a class, and a
pattern without `/` matches a name at any depth (`*.env` is `**/*.env`). A leading
`./` anchors the pattern at the workspace root (`./pre-commit` is the top-level file
only, never `.git/hooks/pre-commit`); a trailing `/` means the directory and
everything in it (`tests/` is `tests/**`).

Three questions are asked of a pattern, because `grep` and `find` look at a whole
directory tree while `read` and `edit` touch one file:

- `matches(path)`: the pattern matches this one path;
- `reaches(directory)`: it matches the directory or something below it (a deny on
  `tests/**` applies to a `grep` of `.`, which reads `tests/`);
- `covers(directory)`: it matches the directory and everything below it (only then
  does an allow on `src/**` allow a `grep` of `src`).

Paths are matched after the tool's own resolution (`..` and symlinks resolved, see
`assembler.permissions.subjects`), so a pattern never sees `..`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANY_SEGMENTS = "**"


@dataclass(frozen=True)
class PathPattern:
    """A compiled path pattern; `never` says why it can never match a workspace path."""

    text: str
    segments: tuple[str | re.Pattern[str], ...]
    regex: re.Pattern[str]
    never: str = ""

    def matches(self, path: str) -> bool:
        return not self.never and self.regex.fullmatch(_rooted(path)) is not None

    def reaches(self, directory: str) -> bool:
        return not self.never and _reaches(self.segments, 0, _split(directory), 0)

    def covers(self, directory: str) -> bool:
        return not self.never and _covers(self.segments, 0, _split(directory), 0)


def compile_path_pattern(text: str) -> PathPattern:
    """Compile `text`. Absolute paths, `~` and `..` are accepted but can never match
    (the file tools cannot leave the workspace), and `never` says so."""
    never = ""
    if text.startswith(("/", "~")):
        never = "path patterns are relative to the workspace, which the file tools cannot leave"
    pattern = text
    anchored = pattern.startswith("./")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):
        pattern += _ANY_SEGMENTS  # `tests/` is the directory and all it holds
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if ".." in parts and not never:
        never = "paths are matched after `..` is resolved, so a pattern with `..` never matches"
    if not anchored and "/" not in pattern.strip("/") and parts != [_ANY_SEGMENTS]:
        parts = [_ANY_SEGMENTS, *parts]
    segments: list[str | re.Pattern[str]] = []
    regex: list[str] = []
    for part in parts:
        if part == _ANY_SEGMENTS:
            if not segments or segments[-1] != _ANY_SEGMENTS:
                segments.append(_ANY_SEGMENTS)
                regex.append("(?:/[^/]+)*")
        else:
            one = segment_regex(part)
            segments.append(re.compile(one, re.DOTALL))
            regex.append("/" + one)
    return PathPattern(text, tuple(segments), re.compile("".join(regex), re.DOTALL), never)


def segment_regex(part: str) -> str:
    """One segment's glob as a regular expression (`**` inside a segment is `*`)."""
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
            while i + 1 < len(part) and part[i + 1] == "*":
                i += 1
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := part.find("]", i + 2)) != -1:
            body = part[i + 1 : end].replace("\\", "\\\\").replace("[", "\\[")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def escape_path(path: str) -> str:
    """A pattern matching exactly `path` and nothing else, anchored at the workspace
    root (what "allow for the session" writes): `src/x.py` is anchored already, a
    single name gets `./` (`./pre-commit`), never a bare name that would match at any
    depth."""
    escaped = re.sub(r"([*?\[])", r"[\1]", path)
    return escaped if "/" in path.strip("/") else "./" + escaped


def _rooted(path: str) -> str:
    return "" if path in ("", ".") else "/" + path.strip("/")


def _split(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p not in ("", "."))


def _fits(segment: str | re.Pattern[str], name: str) -> bool:
    return not isinstance(segment, str) and segment.fullmatch(name) is not None


def _reaches(
    segs: tuple[str | re.Pattern[str], ...], i: int, path: tuple[str, ...], j: int
) -> bool:
    """Can `segs[i:]` match `path[j:]` followed by any (possibly no) further segments?"""
    if j == len(path):
        return True  # what is left of the pattern can be met by something below
    if i == len(segs):
        return False
    if segs[i] == _ANY_SEGMENTS:
        return True  # `**` swallows the rest of the directory
    return _fits(segs[i], path[j]) and _reaches(segs, i + 1, path, j + 1)


def _covers(segs: tuple[str | re.Pattern[str], ...], i: int, path: tuple[str, ...], j: int) -> bool:
    """Does `segs[i:]` match `path[j:]` followed by every possible further segments?"""
    if j == len(path):
        rest = segs[i:]
        return bool(rest) and all(s == _ANY_SEGMENTS for s in rest)
    if i == len(segs):
        return False
    if segs[i] == _ANY_SEGMENTS:
        return _covers(segs, i + 1, path, j) or _covers(segs, i, path, j + 1)
    return _fits(segs[i], path[j]) and _covers(segs, i + 1, path, j + 1)
