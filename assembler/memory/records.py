"""One memory record: what it holds, what makes it valid, and its file on disk.

A record is a Markdown file a person can read and review in git: YAML frontmatter
with `name`, `description` and `type`, then the body. Every way a record arrives
(the `remember` tool, end-of-session extraction, consolidation, a file someone edited
by hand) goes through `validate_record`, so a bad record is refused with the same
message wherever it came from, instead of being stored and failing later.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, get_args

import yaml

from assembler.errors import MemoryStoreError

RecordType = Literal["user", "feedback", "project", "reference"]
RECORD_TYPES: Final[tuple[str, ...]] = get_args(RecordType)
RECORD_FIELDS: Final[tuple[str, ...]] = ("name", "description", "type", "body")

DEFAULT_MAX_BODY_BYTES: Final = 4096
MAX_NAME_LENGTH: Final = 64
MAX_DESCRIPTION_LENGTH: Final = 256

# A slug that is safe as a file name everywhere: it cannot hold a path separator or
# a dot (so never `..` nor a hidden file), and it starts with a letter or digit so it
# is never read as a command-line option.
NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,63}$"
_NAME_RE: Final = re.compile(NAME_PATTERN[1:-1])
_FRONTMATTER_FENCE: Final = "---\n"
# The markers that delimit remembered text in the prompt (`session.format_memories`):
# a record holding one could end the block early and pass its remaining text off as
# instructions.
_MARKER_RE: Final = re.compile(r"</?\s*relevant_memories\s*>", re.IGNORECASE)
_MARKER_PROBLEM: Final = "must not contain the <relevant_memories> markers"
# libyaml's safe loader and dumper when PyYAML was built with it: the same safe subset
# and the same output, about ten times faster, which is what rebuilding the index of a
# large store from its files costs.
_SafeLoader: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: Final = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True)
class MemoryRecord:
    """A validated record. Build it with `make_record` or `validate_record`, which
    normalise the text (line endings, surrounding blank lines) so that what is written
    reads back equal."""

    name: str
    description: str
    type: RecordType
    body: str


def is_valid_name(name: object) -> bool:
    """True for a slug: lowercase letters, digits and hyphens, 1-64, not starting with `-`."""
    return isinstance(name, str) and _NAME_RE.fullmatch(name) is not None


def make_record(
    name: str,
    description: str,
    type: str,
    body: str,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> MemoryRecord:
    """A record from its four fields; `MemoryStoreError` lists every problem at once."""
    return validate_record(
        {"name": name, "description": description, "type": type, "body": body},
        max_body_bytes=max_body_bytes,
    )


def validate_record(
    raw: Mapping[str, Any], *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> MemoryRecord:
    """Check a record given as data (tool arguments, a model's JSON, frontmatter).

    Unknown fields are refused rather than dropped: a misspelt `descripton` should be
    corrected, not silently lose the description.
    """
    if not isinstance(raw, Mapping):
        raise MemoryStoreError(
            "a memory record must be an object with name, description, type and body"
        )
    problems: list[str] = []
    unknown = sorted(str(key) for key in raw if key not in RECORD_FIELDS)
    if unknown:
        problems.append(
            f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(RECORD_FIELDS)}"
        )
    missing = [key for key in RECORD_FIELDS if key not in raw]
    if missing:
        problems.append(f"missing field(s) {', '.join(missing)}")
    name = raw.get("name", "")
    label = name if isinstance(name, str) and name else "?"
    if "name" in raw:
        _check_name(name, problems)
    description = _check_description(raw["description"], problems) if "description" in raw else ""
    record_type = raw.get("type", RECORD_TYPES[0])
    if record_type not in RECORD_TYPES:
        problems.append(f"type must be one of {', '.join(RECORD_TYPES)} (got {record_type!r})")
    body = _check_body(raw["body"], max_body_bytes, problems) if "body" in raw else ""
    if problems:
        raise MemoryStoreError(f"invalid memory record {label!r}: " + "; ".join(problems))
    return MemoryRecord(name, description, cast(RecordType, record_type), body)


def _check_name(value: object, problems: list[str]) -> None:
    if not isinstance(value, str):
        problems.append("name must be a string")
    elif not is_valid_name(value):
        problems.append(
            f"name {value!r} must be 1-{MAX_NAME_LENGTH} lowercase letters, digits and "
            "hyphens, starting with a letter or digit"
        )


def _check_description(value: object, problems: list[str]) -> str:
    if not isinstance(value, str):
        problems.append("description must be a string")
        return ""
    text = value.strip()
    if not text:
        problems.append("description must not be empty")
    elif len(text.splitlines()) > 1 or _has_control(text):
        problems.append("description must be one line")
    elif _MARKER_RE.search(text):
        problems.append(f"description {_MARKER_PROBLEM}")
    elif len(text) > MAX_DESCRIPTION_LENGTH:
        problems.append(
            f"description is {len(text)} characters; keep it to one line of at most "
            f"{MAX_DESCRIPTION_LENGTH}"
        )
    return text


def _check_body(value: object, max_bytes: int, problems: list[str]) -> str:
    if not isinstance(value, str):
        problems.append("body must be a string")
        return ""
    # Leading blank lines and trailing whitespace carry no meaning in Markdown and
    # would otherwise differ between what is written and what is read back.
    text = value.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    while text.startswith("\n"):
        text = text[1:]
    if not text.strip():
        problems.append("body must not be empty")
    elif "\x00" in text:
        problems.append("body must not contain NUL characters")
    elif _MARKER_RE.search(text):
        problems.append(f"body {_MARKER_PROBLEM}")
    else:
        size = len(text.encode("utf-8"))
        if size > max_bytes:
            problems.append(
                f"body is {size} bytes, over the limit of {max_bytes} bytes "
                "(memory.record_max_bytes); shorten it or split it into several records"
            )
    return text


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def to_markdown(record: MemoryRecord) -> str:
    """The file's text: frontmatter (quoted by the YAML dumper where needed), body."""
    header = yaml.dump(
        {"name": record.name, "description": record.description, "type": record.type},
        Dumper=_SafeDumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        default_flow_style=False,
    )
    return f"{_FRONTMATTER_FENCE}{header}{_FRONTMATTER_FENCE}{record.body}\n"


def from_markdown(
    text: str, *, expected_name: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> MemoryRecord:
    """Parse a record file; `MemoryStoreError` says what is wrong with it.

    `expected_name` is the file's stem: a record whose frontmatter names another
    record would be found under one name and shown under another.
    """
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith(_FRONTMATTER_FENCE):
        raise MemoryStoreError("does not start with a `---` frontmatter line")
    end = text.find("\n---\n", len(_FRONTMATTER_FENCE) - 1)
    if end < 0:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise MemoryStoreError("the frontmatter is not closed by a `---` line")
    header = text[len(_FRONTMATTER_FENCE) : end + 1]
    body = text[end + 5 :]
    try:
        meta = yaml.load(header, Loader=_SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" on line {mark.line + 2}" if mark is not None else ""
        problem = getattr(e, "problem", None) or "invalid YAML"
        raise MemoryStoreError(f"invalid frontmatter{where}: {problem}") from e
    if not isinstance(meta, dict):
        raise MemoryStoreError("the frontmatter must be a mapping with name, description, type")
    if "body" in meta:
        raise MemoryStoreError("the frontmatter must not hold `body`; the body follows it")
    record = validate_record({**meta, "body": body}, max_body_bytes=max_body_bytes)
    if expected_name is not None and record.name != expected_name:
        raise MemoryStoreError(
            f"the frontmatter names {record.name!r} but the file is {expected_name}.md"
        )
    return record
