"""The published JSON Schema, its compiled validator, and readable messages.

The schema file is package data and the one contract for manifests; this module
compiles it once per process (validating a thousand manifests must not compile it a
thousand times) and turns jsonschema's errors into messages a person can act on:
the unknown key with a "did you mean", the YAML 1.1 boolean that should have been
quoted, the custom `x-messages` the schema carries for patterns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

from assembler.errors import Issue
from assembler.manifest.hints import model_hint, tools_hint, unknown_key_hint
from assembler.manifest.schema_check import conforms
from assembler.manifest.yaml_source import JsonPath, SourceMap
from assembler.python_source import building_syntax_trees

SCHEMA_RESOURCE = "agent.schema.json"


@cache
def schema_text() -> str:
    """The schema exactly as published (what `assemble schema` prints)."""
    return resources.files("assembler.schemas").joinpath(SCHEMA_RESOURCE).read_text("utf-8")


@cache
def schema() -> Mapping[str, Any]:
    loaded: Mapping[str, Any] = json.loads(schema_text())
    return loaded


@cache
def _validator() -> Any:
    with building_syntax_trees():  # its first import parses Python: see python_source
        from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


def schema_issues(data: Any, source: SourceMap, *, validator: Any = None) -> list[Issue]:
    """Every schema violation in `data`, positioned and worded for people; `validator`
    is another schema's compiled validator (the eval file's), the manifest's by default."""
    if validator is None and conforms(data, schema()) is True:
        return []  # valid, and jsonschema (a third of a command's start-up) not imported
    by_place: dict[tuple[int, int, str, str], Issue] = {}
    for error in (validator or _validator()).iter_errors(data):
        for issue in _describe(error, source):
            # Each missing key is its own issue, although all sit at the mapping.
            missing = issue.message if issue.message.startswith(_MISSING) else ""
            place = (issue.line, issue.column, issue.path, missing)
            # Otherwise one message per place: a value of the wrong type fails both the
            # outer `type` and the branch it fell into. The type error says what is
            # wrong (a string where a mapping belongs); between two, the longer says more.
            if place not in by_place or _weight(issue) > _weight(by_place[place]):
                by_place[place] = issue
    return sorted(by_place.values(), key=lambda i: (i.line, i.column, i.path, i.message))


_MISSING = "missing required key"


def _weight(issue: Issue) -> tuple[bool, int]:
    return issue.message.startswith("expected "), len(issue.message)


def _describe(error: Any, source: SourceMap) -> Iterator[Issue]:
    path: JsonPath = tuple(error.absolute_path)
    keyword = error.validator
    custom = error.schema.get("x-messages", {}) if isinstance(error.schema, dict) else {}
    if keyword in {"if", "then", "else", "allOf"}:
        return
    if keyword in {"anyOf", "oneOf"} and keyword not in custom and error.context:
        for sub in _best(error):
            yield from _describe(sub, source)
        return
    if keyword == "additionalProperties":
        yield from _unknown_keys(error, path, source)
        return
    if "propertyNames" in error.absolute_schema_path:  # about a key: point at the key
        message = custom.get(keyword, _plain(error))
        yield source.issue(
            (*path, str(error.instance)),
            message.replace("{value}", _show(error.instance)),
            key=True,
        )
        return
    if keyword in custom:
        message = custom[keyword].replace("{value}", _show(error.instance))
        if path == ("model",):
            message += model_hint(error.instance)
        yield source.issue(path, message)
        return
    if keyword == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        yield source.issue(path, f"{_MISSING} `{missing}`")
        return
    if keyword == "type":
        yield source.issue(
            path, _type_message(error, path, source) + tools_hint(path, error.instance)
        )
        return
    if keyword == "enum":
        message = _enum_message(error.instance, error.validator_value)
        yield source.issue(path, message + _yaml_reading(error.instance, path, source))
        return
    if keyword == "const":
        yield source.issue(
            path, f"must be {json.dumps(error.validator_value)}, got {_show(error.instance)}"
        )
        return
    yield source.issue(path, _plain(error))


def _best(error: Any) -> list[Any]:
    """The errors of the most relevant branch of an anyOf/oneOf.

    An error at the root of a branch that only says the branch is for another kind
    of value (`type`, an `enum` of strings for a list, a nested anyOf of such) ranks
    last; among the rest the deepest wins (so `builtin: [read, red]` reports `red`,
    not "not one of" for the whole list). Every error of the winning branch is kept:
    two bad items of one list are two issues.
    """

    def mismatch(sub: Any) -> bool:
        if sub.relative_path:
            return False
        if sub.validator == "type":
            return True
        if sub.validator == "enum":
            return not any(type(v) is type(sub.instance) for v in sub.validator_value)
        return sub.validator in {"anyOf", "oneOf"} and all(map(mismatch, sub.context))

    def rank(subs: list[Any]) -> tuple[int, int]:
        return max((0 if mismatch(s) else 1, len(s.relative_path)) for s in subs)

    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    return max(branches.values(), key=rank)


def _unknown_keys(error: Any, path: JsonPath, source: SourceMap) -> Iterator[Issue]:
    known = list(error.schema.get("properties", {}))
    instance = error.instance if isinstance(error.instance, dict) else {}
    for key in instance:
        if key in known:
            continue
        hint = _close_match(str(key), known)
        suggestion = unknown_key_hint(path, str(key)) or (
            f"; did you mean `{hint[0]}`?" if hint else f"; expected one of: {', '.join(known)}"
        )
        yield source.issue((*path, str(key)), f"unknown key `{key}`{suggestion}", key=True)


_JSON_TYPES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a mapping",
    type(None): "null (an empty value)",
}


def _type_name(expected: Any) -> str:
    names = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "true or false",
        "null": "null",
    }
    if isinstance(expected, list):
        return " or ".join(names.get(str(e), str(e)) for e in expected)
    return names.get(expected, str(expected))


def _type_message(error: Any, path: JsonPath, source: SourceMap) -> str:
    got = _JSON_TYPES.get(type(error.instance), type(error.instance).__name__)
    message = f"expected {_type_name(error.validator_value)}, got {got}"
    expected = error.validator_value
    wants_text = expected == "string" or (isinstance(expected, list) and "string" in expected)
    return message + _yaml_reading(error.instance, path, source, suggest_quotes=wants_text)


def _yaml_reading(
    value: Any, path: JsonPath, source: SourceMap, *, suggest_quotes: bool = True
) -> str:
    """Explain a YAML 1.1 surprise: `no` read as false, `1.10` as 1.1, `~` as null."""
    raw = source.plain.get(path)
    if not raw or raw == _show(value):  # an empty value is null, nothing to explain
        return ""
    note = f" (YAML reads the unquoted `{raw}` as {_show(value)}"
    return note + (f'; write "{raw}" if you meant text)' if suggest_quotes else ")")


def _enum_message(value: Any, allowed: list[Any]) -> str:
    choices = ", ".join(f"`{a}`" for a in allowed)
    hint = _close_match(str(value), [str(a) for a in allowed])
    suggestion = f"; did you mean `{hint[0]}`?" if hint else ""
    return f"{_show(value)} is not one of {choices}{suggestion}"


def _show(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _plain(error: Any) -> str:
    """Bounds and lengths in words; jsonschema's own wording for the rare rest."""
    keyword, limit, value = error.validator, error.validator_value, error.instance
    if keyword in {"minLength", "minItems"} and limit == 1:
        return "must not be empty"
    bounds = {
        "minimum": "at least",
        "maximum": "at most",
        "exclusiveMinimum": "greater than",
        "exclusiveMaximum": "less than",
        "minLength": "at least {} characters long",
        "maxLength": "at most {} characters long",
        "minItems": "a list of at least {} items",
        "maxItems": "a list of at most {} items",
    }
    if keyword in bounds:
        wording = bounds[keyword]
        wording = wording.format(limit) if "{}" in wording else f"{wording} {_show(limit)}"
        shown = f"{len(value)}" if keyword.endswith(("Length", "Items")) else _show(value)
        return f"must be {wording}, got {shown}"
    return str(error.message)


def _close_match(word: str, choices: list[str]) -> list[str]:
    # imported here for start-up cost: only an invalid manifest needs a hint
    import difflib

    return difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
