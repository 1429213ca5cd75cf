"""Texts as a replay compares them: normalised the same way on both sides, stored
compactly, and the first changed line shown when they differ.

What a session recorded and what the agent sends now differ in ways that are not
changes to the agent: the workspace is a fresh copy somewhere else, the repository is
checked out elsewhere, a test runner prints how long it took. `Normalizer` turns both
sides into the same form first: the secrets scrubbed (`scrub.Scrubber`), the
workspace and repository paths written `{workspace}` and `{repo}`, then the expected
file's own `normalize` rules (regular expressions; the defaults cover durations and
timestamps; a person may add more).

A `TextRecord` keeps a text whole when it is short (so a diff can show both lines) and
otherwise its hash and a short hash per line (so a diff can still say which line
changed and show the new one).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from assembler.errors import ConversionError
from assembler.regress.scrub import Scrubber

TEXT_LIMIT: Final = 4000
"""Characters a stored text keeps whole; longer ones keep a hash per line."""
LINE_HASH: Final = 10
SHOWN: Final = 80

DEFAULT_RULES: Final = (
    (r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "{time}"),
    (r"\b\d+\.\d+ ?s\b", "{seconds}s"),
    (r"\b\d+(?:\.\d+)? ?ms\b", "{ms}ms"),
)
"""Durations and timestamps: a test runner's `Ran 4 tests in 0.001s` is not a change."""


@dataclass(frozen=True)
class Rule:
    pattern: str
    replace: str

    def to_dict(self) -> dict[str, str]:
        return {"pattern": self.pattern, "replace": self.replace}


def default_rules() -> tuple[Rule, ...]:
    return tuple(Rule(p, r) for p, r in DEFAULT_RULES)


@dataclass
class Normalizer:
    """Brings a text to the form both sides of a comparison share."""

    places: Mapping[str, str] = field(default_factory=dict)
    """Path -> placeholder (`/tmp/x/shipping` -> `{workspace}`), longest first."""
    rules: Sequence[Rule] = ()
    scrubber: Scrubber | None = None

    def __post_init__(self) -> None:
        self.places = dict(sorted(self.places.items(), key=lambda item: -len(item[0])))
        try:
            self._compiled = [(re.compile(r.pattern), r.replace) for r in self.rules]
        except re.error as e:
            raise ConversionError(f"a `normalize` pattern does not compile: {e}") from e

    def __call__(self, text: str) -> str:
        if self.scrubber is not None:
            text = self.scrubber.text(text)
        for path, placeholder in self.places.items():
            if path and path in text:
                text = text.replace(path, placeholder)
        for pattern, replacement in self._compiled:
            text = pattern.sub(replacement, text)
        return text


def places_for(workspace: str, repo: str | None, *aliases: tuple[str, str]) -> dict[str, str]:
    """The path placeholders: the workspace (as given and resolved) and the repository."""
    places = {workspace: "{workspace}"}
    if repo:
        places[repo] = "{repo}"
    places.update(dict(aliases))
    return {path: name for path, name in places.items() if path and path != "/"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _line_hashes(text: str) -> tuple[str, ...]:
    return tuple(sha(line)[:LINE_HASH] for line in text.split("\n"))


@dataclass(frozen=True)
class TextRecord:
    """A text as an expected file keeps it: whole when short, else hashes."""

    sha256: str
    text: str | None = None
    lines: tuple[str, ...] = ()
    chars: int = 0

    @classmethod
    def of(cls, text: str, limit: int = TEXT_LIMIT) -> TextRecord:
        if len(text) <= limit:
            return cls(sha(text), text, (), len(text))
        return cls(sha(text), None, _line_hashes(text), len(text))

    def matches(self, text: str) -> bool:
        return sha(text) == self.sha256

    def to_dict(self) -> dict[str, Any]:
        if self.text is not None:
            return {"text": self.text}
        return {"sha256": self.sha256, "chars": self.chars, "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> TextRecord:
        """A stored text; a `text` is hashed anew, so a person may edit it."""
        if isinstance(data, str):
            return cls.of(data, limit=len(data))
        if not isinstance(data, Mapping):
            raise ConversionError(f"{where}: expected a text or {{sha256, lines}}")
        if isinstance(data.get("text"), str):
            return cls.of(data["text"], limit=len(data["text"]))
        digest, lines = data.get("sha256"), data.get("lines", [])
        if not isinstance(digest, str) or not isinstance(lines, list):
            raise ConversionError(f"{where}: a long text needs `sha256` and `lines`")
        return cls(digest, None, tuple(str(line) for line in lines), int(data.get("chars", 0)))


def first_change(old: TextRecord, new: str) -> str:
    """The first line that differs: `+ `added``, `- `removed`` or both."""
    new_lines = new.split("\n")
    if old.text is not None:
        old_lines = old.text.split("\n")
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    else:
        matcher = difflib.SequenceMatcher(
            None, list(old.lines), list(_line_hashes(new)), autojunk=False
        )
        old_lines = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed = ""
        if i2 > i1:
            removed = f"- `{_clip(old_lines[i1])}`" if old_lines else f"- line {i1 + 1}"
        added = f"+ `{_clip(new_lines[j1])}`" if j2 > j1 else ""
        return " ".join(part for part in (removed, added) if part) or "whitespace"
    return "the same lines, other bytes"


def first_line(text: str) -> str:
    return _clip(next((line for line in text.split("\n") if line.strip()), ""))


def _clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= SHOWN else line[: SHOWN - 1] + "…"
