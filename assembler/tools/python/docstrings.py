"""Docstrings split into the prose the model reads and per-parameter notes.

One parser serves both views of a Python tool (the imported function's `__doc__`
and the source's `ast.get_docstring`), so both describe it in the same words.
Google (`Args:`), reST (`:param x:`) and NumPy (`Parameters` over a rule) styles.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Docstring:
    """A docstring split into the prose the model reads and per-parameter notes."""

    description: str = ""
    params: Mapping[str, str] = field(default_factory=dict)


_GOOGLE_PARAMS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "other parameters",
}
_GOOGLE_OTHER = {"returns", "return", "yields", "yield", "raises", "raise"}
_NUMPY_PARAMS = {"parameters", "other parameters"}
_NUMPY_SECTIONS = {*_NUMPY_PARAMS, "returns", "yields", "receives", "raises", "warns"}
_GOOGLE_HEADER = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*:\s*")
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)")
_REST_FIELD = re.compile(
    r":(?:param|parameter|arg|argument|key|keyword|type|raises?|except|exception"
    r"|returns?|rtype|yields?|ytype|meta)\b"
)
_REST_PARAM = re.compile(r":(?:param|parameter|arg|argument|key|keyword)\s+([^:]+?)\s*:(.*)")
_NUMPY_RULE = re.compile(r"-{3,}")
_NUMPY_ENTRY = re.compile(r"(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?")


def parse_docstring(doc: str | None) -> Docstring:
    """Description and parameter notes of a docstring already cleaned by
    `inspect.cleandoc` (which is what `ast.get_docstring(clean=True)` returns too).

    The description is everything before the first section that documents the
    signature: Google `Args:`/`Returns:`/`Raises:`, reST `:param x:` fields, NumPy
    `Parameters` over a dashed rule. Parameter notes come from any of the three styles.
    """
    if not doc:
        return Docstring()
    lines = [line.rstrip() for line in doc.splitlines()]
    end = next((i for i in range(len(lines)) if _section_kind(lines, i)), len(lines))
    description = "\n".join(lines[:end]).strip()
    params: dict[str, str] = {}
    for index in range(end, len(lines)):
        kind = _section_kind(lines, index)
        if kind == "google-params":
            params.update(_google_params(lines, index + 1))
        elif kind == "numpy-params":
            params.update(_numpy_params(lines, index + 2))
        elif kind == "rest":
            found = _REST_PARAM.fullmatch(lines[index])
            if found:
                name = found.group(1).split()[-1].lstrip("*")
                params[name] = _join([found.group(2), *_indented_after(lines, index + 1)])
    return Docstring(description, {k: v for k, v in params.items() if v})


def _section_kind(lines: Sequence[str], index: int) -> str:
    """What the line at `index` starts: a parameter section, another signature
    section, a reST field, or nothing ("")."""
    line = lines[index]
    if not line or line[0].isspace():
        return ""
    header = _GOOGLE_HEADER.fullmatch(line)
    if header:
        title = header.group(1).lower()
        if title in _GOOGLE_PARAMS:
            return "google-params"
        if title in _GOOGLE_OTHER:
            return "google"
    following = lines[index + 1] if index + 1 < len(lines) else ""
    if _NUMPY_RULE.fullmatch(following.strip()) and line.strip().lower() in _NUMPY_SECTIONS:
        return "numpy-params" if line.strip().lower() in _NUMPY_PARAMS else "numpy"
    if _REST_FIELD.match(line):
        return "rest"
    return ""


def _google_params(lines: Sequence[str], start: int) -> Iterator[tuple[str, str]]:
    """Entries of a Google section: `name (type): text`, continued on deeper lines."""
    entry_indent: int | None = None
    name = ""
    text: list[str] = []
    for line in lines[start:]:
        if not line:
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            break
        if entry_indent is None:
            entry_indent = indent
        found = _GOOGLE_ENTRY.fullmatch(line.strip()) if indent <= entry_indent else None
        if found:
            if name:
                yield name, _join(text)
            name, text = found.group(1), [found.group(2)]
        elif name:
            text.append(line)
    if name:
        yield name, _join(text)


def _numpy_params(lines: Sequence[str], start: int) -> Iterator[tuple[str, str]]:
    """Entries of a NumPy section: `name : type` lines, the text indented below."""
    index = start
    while index < len(lines):
        line = lines[index]
        if line and not line[0].isspace():
            if _section_kind(lines, index) or (
                index + 1 < len(lines) and _NUMPY_RULE.fullmatch(lines[index + 1].strip())
            ):
                return
            found = _NUMPY_ENTRY.fullmatch(line)
            text = _indented_after(lines, index + 1)
            if found:
                for name in found.group(1).split(","):
                    yield name.strip().lstrip("*"), _join(text)
            index += 1 + len(text)
        else:
            index += 1


def _indented_after(lines: Sequence[str], start: int) -> list[str]:
    """The indented (or blank) lines from `start` up to the next unindented one."""
    taken: list[str] = []
    for line in lines[start:]:
        if line and not line[0].isspace():
            break
        taken.append(line)
    while taken and not taken[-1]:
        taken.pop()
    return taken


def _join(parts: Sequence[str]) -> str:
    return " ".join(" ".join(parts).split())
