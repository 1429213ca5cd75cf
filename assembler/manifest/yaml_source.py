"""Safe YAML loading that remembers where every value came from.

PyYAML's own loaders lose positions once values are built, expand aliases without
limit and let the last duplicate key win silently. This module builds plain Python
values straight from the C parser's event stream instead, so that:

- every value keeps its line and column (`SourceMap`), for `file:line:col` errors;
- duplicate keys are errors naming both lines;
- timestamps stay strings and custom tags are refused (no object construction);
- an alias is shared, not copied, and the expanded size is capped, so an alias bomb
  costs a counter, not memory;
- nesting depth is capped, so a file of ten thousand `[` cannot exhaust the stack.

Anything wrong becomes a `ManifestError` with one `Issue`; nothing else escapes.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml import events
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import Resolver

from assembler.errors import Issue, ManifestError
from assembler.manifest.hints import tab_hint

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 100_000
MAX_NUMBER_CHARS = 400

JsonPath = tuple[str | int, ...]

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = Resolver()
_SCALARS = SafeConstructor()

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null"))
_MERGE, _TIMESTAMP, _VALUE = f"{_TAG}merge", f"{_TAG}timestamp", f"{_TAG}value"
_MAP, _SEQ = f"{_TAG}map", f"{_TAG}seq"
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # what libyaml counts as a line break
_ALLOWED_SCALAR_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP, _MERGE, _VALUE, "!"}


@dataclass(frozen=True)
class Mark:
    """A 1-based line and column."""

    line: int
    column: int


@dataclass
class SourceMap:
    """Where each JSON path of a loaded document starts in its file.

    `keys` holds the position of a mapping key, `values` of the value (or of the
    element, for sequences). `plain` remembers plain (unquoted) scalars that YAML
    read as something other than a string, so a type error can say "quote it".
    `text` holds where the text of a quoted or block string starts (after the quote;
    for `|` and `>`, on the line below the indicator, after the indentation).
    """

    file: str
    keys: dict[JsonPath, Mark] = field(default_factory=dict)
    values: dict[JsonPath, Mark] = field(default_factory=dict)
    plain: dict[JsonPath, str] = field(default_factory=dict)
    block: set[JsonPath] = field(default_factory=set)
    text: dict[JsonPath, Mark] = field(default_factory=dict)

    def text_position(self, path: JsonPath, line: int, column: int) -> Mark:
        """Position of (`line`, `column`), both 1-based, inside the string at `path`.

        Exact for single-line values and for the lines of a `|` block scalar; for
        folded (`>`) and multi-line flow scalars, whose lines YAML joins, the line
        after the first is approximate.
        """
        start = self.text.get(path) or self.locate(path)
        if line == 1 or path in self.block:
            return Mark(start.line + line - 1, start.column + column - 1)
        return Mark(start.line + line - 1, column)

    def locate(self, path: JsonPath, *, key: bool = False) -> Mark:
        """The position of `path`, or of its nearest ancestor that has one."""
        probe = path
        while True:
            table = self.keys if key else self.values
            mark = table.get(probe) or self.values.get(probe)
            if mark is not None:
                return mark
            if not probe:
                return Mark(1, 1)
            probe = probe[:-1]

    def issue(
        self, path: JsonPath, message: str, *, severity: str = "error", key: bool = False
    ) -> Issue:
        """An `Issue` for `path`, positioned in this file."""
        mark = self.locate(path, key=key)
        return Issue(
            file=self.file,
            line=mark.line,
            column=mark.column,
            severity="warning" if severity == "warning" else "error",
            message=message,
            path=format_path(path),
        )


@dataclass(frozen=True)
class YamlDocument:
    """A loaded document: plain JSON-like data and where each part came from.

    `issues` holds the problems that did not stop reading (a duplicate key, with
    `collect=True`): the first value of the key is kept, and the rest of the file is
    still read, so its other problems are reported in the same run.
    """

    data: Any
    source: SourceMap
    issues: tuple[Issue, ...] = ()


def format_path(path: JsonPath) -> str:
    """`tools.sets[0].allow`: the form users see in `[...]` after each message."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier() or part.replace("-", "_").isidentifier():
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{part!r}]")
    return "".join(out)


def read_manifest_text(path: Path, display: str | None = None) -> str:
    """Read a YAML file as text, refusing what is not a small UTF-8 text file."""
    shown = display or str(path)
    try:
        if path.is_dir():
            raise _error(shown, "is a directory, not a manifest file")
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            raise _error(shown, "is not a regular file")
        size = info.st_size
        if size > MAX_FILE_BYTES:
            raise _error(shown, f"file is {size:,} bytes; manifests are limited to 1 MiB")
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise _error(shown, "file not found") from None
    except PermissionError:
        raise _error(shown, "permission denied") from None
    except IsADirectoryError:
        raise _error(shown, "is a directory, not a manifest file") from None
    except OSError as e:
        raise _error(shown, f"cannot read file: {e.strerror or e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _error(shown, "file is larger than 1 MiB; manifests are limited to 1 MiB")
    return decode_text(raw, shown)


def decode_text(raw: bytes, display: str) -> str:
    """UTF-8 (with or without BOM) only; a NUL byte means a binary file."""
    nul = raw.find(b"\0")
    if nul >= 0:
        line, column = _byte_position(raw, nul)
        raise _error(
            display, "binary file (contains a NUL byte); expected UTF-8 YAML", line, column
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = _byte_position(raw, e.start)
        raise _error(
            display,
            f"invalid UTF-8 (byte 0x{raw[e.start]:02x}); save the file as UTF-8",
            line,
            column,
        ) from None
    return text.removeprefix("\ufeff")


def load_yaml_text(
    text: str, display: str, *, line_offset: int = 0, collect: bool = False
) -> YamlDocument:
    """Parse one YAML document from `text`; `line_offset` shifts reported lines
    (used for the frontmatter of a `SKILL.md`, which starts below a `---` line).

    A duplicate key raises, unless `collect`: then it is in the document's `issues`
    and reading goes on (`assemble validate` reports everything in one run).
    """
    builder = _Builder(display, line_offset, text)
    try:
        data = builder.build(yaml.parse(text, Loader=_Loader))
    except ManifestError:
        raise
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        message = " ".join(str(part) for part in (e.context, e.problem) if part) or "invalid YAML"
        line = mark.line + 1 + line_offset if mark else 0
        column = mark.column + 1 if mark else 0
        message += tab_hint(text, line, line_offset)
        raise _error(display, f"YAML syntax error: {message}", line, column) from None
    except yaml.YAMLError as e:
        raise _error(display, f"YAML error: {e}") from None
    except RecursionError:
        raise _error(display, f"nesting deeper than {MAX_DEPTH} levels") from None
    if builder.issues and not collect:
        raise ManifestError(builder.issues)
    return YamlDocument(data, builder.source, tuple(builder.issues))


def load_yaml_file(
    path: Path, display: str | None = None, *, collect: bool = False
) -> YamlDocument:
    """Read and parse a manifest file (see `read_manifest_text`, `load_yaml_text`)."""
    shown = display or os.fspath(path)
    return load_yaml_text(read_manifest_text(path, shown), shown, collect=collect)


def _error(file: str, message: str, line: int = 0, column: int = 0) -> ManifestError:
    return ManifestError([Issue(file=file, line=line, column=column, message=message)])


def _short_tag(tag: str | None) -> str:
    return (tag or "").replace(_TAG, "!!")


def _byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


class _Builder:
    """Turns parser events into values, positions and checks (see module doc)."""

    def __init__(self, display: str, line_offset: int, text: str = "") -> None:
        self.display = display
        self.line_offset = line_offset
        self.text = text
        self.lines: list[str] | None = None
        self.source = SourceMap(display)
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.expanded = 0
        self.issues: list[Issue] = []

    def mark(self, event: events.Event) -> Mark:
        start = event.start_mark
        if start is None:  # the parser always sets it; the stubs allow None
            return Mark(0, 0)
        return Mark(start.line + 1 + self.line_offset, start.column + 1)

    def fail(self, event: events.Event, message: str) -> ManifestError:
        mark = self.mark(event)
        return _error(self.display, message, mark.line, mark.column)

    def build(self, stream: Iterator[events.Event]) -> Any:
        documents = 0
        data: Any = None
        for event in stream:
            if isinstance(event, events.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise self.fail(
                        event, "more than one YAML document; a manifest is one document"
                    )
                data, _ = self.node(next(stream), stream, (), 0)
            elif isinstance(event, events.DocumentEndEvent | events.StreamStartEvent):
                continue
            elif isinstance(event, events.StreamEndEvent):
                break
        if documents == 0:
            raise _error(
                self.display,
                "empty file; a manifest needs at least `version`, `name` and `identity`",
            )
        return data

    def node(
        self, event: events.Event, stream: Iterator[events.Event], path: JsonPath, depth: int
    ) -> tuple[Any, int]:
        """Build the value that starts with `event`; returns (value, expanded size)."""
        if depth > MAX_DEPTH:
            raise self.fail(event, f"nesting deeper than {MAX_DEPTH} levels")
        self.source.values.setdefault(path, self.mark(event))
        if isinstance(event, events.AliasEvent):
            if event.anchor not in self.anchors:
                raise self.fail(event, f"unknown alias *{event.anchor}")
            value, size = self.anchors[event.anchor]
            self.count(event, size)
            return value, size
        if isinstance(event, events.ScalarEvent):
            value = self.scalar(event, path)
            size = 1
            self.count(event, size)
        elif isinstance(event, events.SequenceStartEvent):
            self.check_collection_tag(event, _SEQ)
            value, size = self.sequence(stream, path, depth)
        elif isinstance(event, events.MappingStartEvent):
            self.check_collection_tag(event, _MAP)
            value, size = self.mapping(event, stream, path, depth)
        else:
            raise self.fail(event, f"unexpected YAML event {type(event).__name__}")
        anchor = getattr(event, "anchor", None)
        if anchor:
            self.anchors[anchor] = (value, size)
        return value, size

    def count(self, event: events.Event, size: int) -> None:
        self.expanded += size
        if self.expanded > MAX_EXPANDED_NODES:
            raise self.fail(
                event,
                f"document expands to more than {MAX_EXPANDED_NODES:,} values through "
                "aliases; refusing (alias bomb?)",
            )

    def check_collection_tag(self, event: events.CollectionStartEvent, expected: str) -> None:
        if event.tag not in (None, "!", expected):
            raise self.fail(
                event, f"custom tag {_short_tag(event.tag)} is not allowed in a manifest"
            )

    def sequence(
        self, stream: Iterator[events.Event], path: JsonPath, depth: int
    ) -> tuple[list[Any], int]:
        items: list[Any] = []
        size = 1
        for event in stream:
            if isinstance(event, events.SequenceEndEvent):
                return items, size
            value, child = self.node(event, stream, (*path, len(items)), depth + 1)
            items.append(value)
            size += child
        raise _error(self.display, "unexpected end of YAML stream")

    def mapping(
        self,
        start: events.MappingStartEvent,
        stream: Iterator[events.Event],
        path: JsonPath,
        depth: int,
    ) -> tuple[dict[Any, Any], int]:
        result: dict[Any, Any] = {}
        seen: dict[Any, tuple[Mark, Any]] = {}
        merged: list[dict[Any, Any]] = []
        size = 1
        for event in stream:
            if isinstance(event, events.MappingEndEvent):
                for source in merged:
                    for key, value in source.items():
                        result.setdefault(key, value)
                return result, size
            if not isinstance(event, events.ScalarEvent):
                raise self.fail(
                    event, "mapping keys must be plain scalars, not collections or aliases"
                )
            key_mark = self.mark(event)
            if self.is_merge_key(event):
                value_event = next(stream)
                value, child = self.node(value_event, stream, path, depth + 1)
                merged.extend(self.merge_sources(value_event, value))
                size += child
                continue
            key = self.scalar(event, None)
            child_path = (*path, key if isinstance(key, str) else str(key))
            if key in seen:
                # Reported, and the value read past (the first one stays), so the rest
                # of the file is still checked; `load_yaml_text` decides whether to raise.
                self.issues.append(self.duplicate(event, key, seen[key], child_path))
                _, child = self.node(next(stream), stream, (*child_path, "<duplicate>"), depth + 1)
                size += child
                continue
            seen[key] = (key_mark, key)
            self.source.keys[child_path] = key_mark
            value, child = self.node(next(stream), stream, child_path, depth + 1)
            result[key] = value
            size += child
        raise self.fail(start, "unexpected end of YAML stream")

    def duplicate(
        self, event: events.ScalarEvent, key: Any, first: tuple[Mark, Any], path: JsonPath
    ) -> Issue:
        mark = self.mark(event)
        if type(key) is not type(first[1]):  # `1:` and `true:` are equal in Python
            message = (
                f"key `{event.value}` (read as {key!r}) clashes with the key "
                f"{first[1]!r} on line {first[0].line}; quote the keys to keep both"
            )
        else:
            message = (
                f"duplicate key {key!r} (first defined at line {first[0].line}); "
                "YAML would silently keep only the last one"
            )
        return Issue(self.display, mark.line, mark.column, "error", message, format_path(path))

    def is_merge_key(self, event: events.ScalarEvent) -> bool:
        return event.value == "<<" and event.implicit[0] and event.tag is None

    def merge_sources(self, event: events.Event, value: Any) -> list[dict[Any, Any]]:
        if isinstance(value, dict):
            return [value]
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return list(value)
        raise self.fail(event, "a merge key `<<` needs a mapping or a list of mappings")

    def text_start(self, event: events.ScalarEvent, path: JsonPath) -> None:
        """Remember where the text of a quoted or block scalar begins."""
        mark = self.mark(event)
        if event.style in ("'", '"'):
            self.source.text[path] = Mark(mark.line, mark.column + 1)
            return
        self.source.block.add(path)
        if self.lines is None:
            self.lines = _LINE_BREAK.split(self.text)
        first = mark.line - self.line_offset  # 0-based index of the line below the indicator
        last = event.end_mark.line + 1 if event.end_mark else len(self.lines)
        for index in range(first, min(last, len(self.lines))):
            content = self.lines[index]
            if content.strip():
                indent = len(content) - len(content.lstrip(" "))
                self.source.text[path] = Mark(first + 1 + self.line_offset, indent + 1)
                return
        self.source.text[path] = Mark(first + 1 + self.line_offset, mark.column)

    def scalar(self, event: events.ScalarEvent, path: JsonPath | None) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
        elif tag.startswith("!!"):
            tag = _TAG + tag[2:]
        if tag not in _ALLOWED_SCALAR_TAGS:
            raise self.fail(
                event, f"custom tag {_short_tag(event.tag)} is not allowed in a manifest"
            )
        text = event.value
        if "\0" in text:  # only reachable through a `"\0"` escape; no path or text needs it
            raise self.fail(event, "a NUL character (`\\0`) is not allowed in a manifest")
        if path is not None and event.style:
            self.text_start(event, path)
        if tag in (_STR, _TIMESTAMP, _VALUE, _MERGE, "!"):
            return text
        if tag in (_INT, _FLOAT) and len(text) > MAX_NUMBER_CHARS:
            raise self.fail(
                event,
                f"number literal of {len(text):,} characters is too long "
                f"(at most {MAX_NUMBER_CHARS}); quote it if it is meant as text",
            )
        node = yaml.ScalarNode(tag, text)
        try:
            if tag == _INT:
                value: Any = _SCALARS.construct_yaml_int(node)
            elif tag == _FLOAT:
                value = _SCALARS.construct_yaml_float(node)
            elif tag == _BOOL:
                value = _SCALARS.construct_yaml_bool(node)
            else:
                value = None
        except (ValueError, ConstructorError) as e:
            raise self.fail(
                event, f"cannot read {text!r} as {tag.rsplit(':', 1)[-1]}: {e}"
            ) from None
        if path is not None and event.implicit[0] and not event.style:
            self.source.plain[path] = text
        return value
