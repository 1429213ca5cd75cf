"""JSON Schemas that a manifest writes for its values: checked, compiled, and their
errors worded.

A parameter's schema and the output schema are the user's, so `validate` checks them
against the 2020-12 metaschema and follows every `$ref` before anything runs. A
reference must point inside the schema (`#/$defs/x`, `#anchor`): the schema is sent to
model providers whole, and a remote one would mean a network request while validating
(jsonschema retrieves unknown `$ref` URLs by default). With every reference local and
resolvable, a compiled validator never retrieves anything.

jsonschema is imported inside the functions: a manifest without parameters or output
never pays its import (a third of `assemble validate`'s start-up).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from assembler.python_source import building_syntax_trees
from assembler.text import one_line

#: Keywords whose value is one subschema.
_ONE = (
    "items",
    "additionalProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)
#: Keywords whose value is a list of subschemas.
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
#: Keywords whose value maps names to subschemas.
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

#: Errors listed for one value at most: a model sent back a hundred is not helped more.
MAX_ERRORS = 20
#: Longest error line: a value quoted in a message may be a megabyte.
ERROR_CHARS = 300

JsonPath = tuple[str | int, ...]


@dataclass(frozen=True)
class SchemaProblem:
    """Something wrong with a schema itself, at `path` inside it."""

    path: JsonPath
    message: str


def subschemas(schema: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Mapping[str, Any]]]:
    """Every schema object inside `schema` (itself first), with its path, following the
    keywords that hold schemas; never the data of `enum`, `const` or `default`."""
    if not isinstance(schema, Mapping):
        return
    yield path, schema
    for keyword in _ONE:
        if keyword in schema:
            yield from subschemas(schema[keyword], (*path, keyword))
    for keyword in _LIST:
        value = schema.get(keyword)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield from subschemas(item, (*path, keyword, index))
    for keyword in _MAP:
        value = schema.get(keyword)
        if isinstance(value, Mapping):
            for name, item in value.items():
                yield from subschemas(item, (*path, keyword, name))


def schema_problems(schema: Any) -> list[SchemaProblem]:
    """What makes `schema` unusable: metaschema violations, then references that are
    not local or point at nothing. Empty: it can be compiled and sent to a model."""
    with building_syntax_trees():  # its first import parses Python: see python_source
        from jsonschema import Draft202012Validator

    problems = [
        SchemaProblem(tuple(error.absolute_path), one_line(error.message, ERROR_CHARS))
        for error in sorted(
            Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema),
            key=lambda e: [str(p) for p in e.absolute_path],
        )
    ]
    for path, node in subschemas(schema):
        for at, pattern in _patterns(node, path):
            try:
                re.compile(pattern)
            except re.error as e:
                problems.append(SchemaProblem(at, f"`{pattern}` is not a regular expression: {e}"))
        for keyword in ("$ref", "$dynamicRef"):
            reference = node.get(keyword)
            if isinstance(reference, str):
                problem = reference_problem(schema, keyword, reference)
                if problem:
                    problems.append(SchemaProblem((*path, keyword), problem))
    return problems


def _patterns(node: Mapping[str, Any], path: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    """The regular expressions of one schema object: `pattern`, `patternProperties`."""
    if isinstance(node.get("pattern"), str):
        yield (*path, "pattern"), node["pattern"]
    extra = node.get("patternProperties")
    if isinstance(extra, Mapping):
        for key in extra:
            yield (*path, "patternProperties", key), str(key)


def reference_problem(root: Any, keyword: str, reference: str) -> str:
    """Why `reference` cannot be used ("" when it resolves inside `root`)."""
    if keyword == "$dynamicRef":
        return "`$dynamicRef` is not supported here; use `$ref` to a `#/$defs/...` entry"
    if not reference.startswith("#"):
        return (
            f"`$ref: {reference}` points outside the schema; only references inside it "
            "(`#/$defs/NAME`) are allowed, since the whole schema is sent to the model (put "
            "the definition under `$defs`)"
        )
    if resolve_local(root, reference) is _NOWHERE:
        return f"`$ref: {reference}` points at nothing in this schema"
    return ""


_NOWHERE = object()


def resolve_local(root: Any, reference: str) -> Any:
    """The subschema a local reference names (`#`, `#/a/b`, `#anchor`), else `_NOWHERE`."""
    fragment = unquote(reference[1:])
    if not fragment:
        return root
    if not fragment.startswith("/"):
        for _, node in subschemas(root):
            if node.get("$anchor") == fragment:
                return node
        return _NOWHERE
    found: Any = root
    for raw in fragment[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(found, Mapping) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return _NOWHERE
    return found


class CompiledSchema:
    """A schema ready for many values: the fast predicate (`typed.fastcheck`) says
    "valid" when it can; jsonschema decides otherwise and words the errors."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        with building_syntax_trees():  # its first import parses Python: see python_source
            from jsonschema import Draft202012Validator

        from assembler.typed.fastcheck import compile_fast

        self.validator = Draft202012Validator(schema)
        self.fast = compile_fast(schema)

    def is_valid(self, value: Any) -> bool:
        if self.fast is not None:
            try:
                if self.fast(value):
                    return True
            except RecursionError:
                pass  # a value nested past Python's stack: jsonschema's turn
        return bool(self.validator.is_valid(value))

    def iter_errors(self, value: Any) -> Iterator[Any]:
        return iter(self.validator.iter_errors(value))


def compile_schema(schema: Mapping[str, Any]) -> CompiledSchema:
    """A validator for a schema that `schema_problems` found usable; build it once (per
    agent) and use it for every value."""
    return CompiledSchema(schema)


def value_errors(validator: Any, value: Any, *, prefix: str = "$") -> list[str]:
    """Every way `value` fails `validator`'s schema (at most `MAX_ERRORS`), each as
    `$.labels[0]: 3 is not of type 'string'`, in document order (`prefix` names the
    value; "" leaves the place out when it is the value itself). Empty: valid."""
    if validator.is_valid(value):  # the fast path: no error objects are built
        return []
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    lines = []
    for error in errors[:MAX_ERRORS]:
        where = json_path(tuple(error.absolute_path), prefix)
        message = one_line(error.message, ERROR_CHARS)
        lines.append(f"{where}: {message}" if where else message)
    if len(errors) > MAX_ERRORS:
        lines.append(f"... and {len(errors) - MAX_ERRORS} more")
    return lines


def json_path(path: JsonPath, prefix: str = "$") -> str:
    """`$.labels[0]`, `$["odd key"]`: a place inside a value, as messages show it."""
    out = [prefix]
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{part!r}]")
    return "".join(out)
