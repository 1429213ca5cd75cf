"""The published JSON Schema, its compiled validator, and readable messages.

The schema file is package data and the one contract for manifests; this module
compiles it once per process (validating a thousand manifests must not compile it a
thousand times) and turns jsonschema's errors into messages a person can act on:
the unknown key with a "did you mean", the YAML 1.1 boolean that should have been
quoted, the custom `x-messages` the schema carries for patterns.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

from assembler.errors import Issue
from assembler.manifest.yaml_source import JsonPath, SourceMap

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
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


def schema_issues(data: Any, source: SourceMap) -> list[Issue]:
    """Every schema violation in `data`, positioned and worded for people."""
    by_place: dict[tuple[int, int, str], Issue] = {}
    for error in _validator().iter_errors(data):
        for issue in _describe(error, source):
            place = (issue.line, issue.column, issue.path)
            # One message per place: a value of the wrong type fails both the outer
            # `type` and the branch it fell into; the longer message says more.
            if place not in by_place or len(issue.message) > len(by_place[place].message):
                by_place[place] = issue
    return sorted(by_place.values(), key=lambda i: (i.line, i.column, i.path))


def _describe(error: Any, source: SourceMap) -> Iterator[Issue]:
    path: JsonPath = tuple(error.absolute_path)
    keyword = error.validator
    custom = error.schema.get("x-messages", {}) if isinstance(error.schema, dict) else {}
    if keyword in {"if", "then", "else", "allOf"}:
        return
    if keyword in {"anyOf", "oneOf"} and keyword not in custom and error.context:
        yield from _describe(_best(error), source)
        return
    if keyword == "additionalProperties":
        yield from _unknown_keys(error, path, source)
        return
    if keyword in custom:
        yield source.issue(path, custom[keyword].replace("{value}", _show(error.instance)))
        return
    if keyword == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        yield source.issue(path, f"missing required key `{missing}`")
        return
    if keyword == "type":
        yield source.issue(path, _type_message(error, path, source))
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
    yield source.issue(path, _plain(error.message))


def _best(error: Any) -> Any:
    """Pick the most relevant sub-error of an anyOf/oneOf.

    A `type` error at the root of a branch only says the branch is for another kind
    of value, so it ranks last; among the rest the deepest wins (so `builtin: [read,
    red]` reports `red`, not "not one of" for the whole list).
    """

    def rank(sub: Any) -> tuple[int, int]:
        branch_mismatch = sub.validator == "type" and not sub.relative_path
        return (0 if branch_mismatch else 1, len(sub.relative_path))

    return max(error.context, key=rank)


def _unknown_keys(error: Any, path: JsonPath, source: SourceMap) -> Iterator[Issue]:
    known = list(error.schema.get("properties", {}))
    instance = error.instance if isinstance(error.instance, dict) else {}
    for key in instance:
        if key in known:
            continue
        hint = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        suggestion = (
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
        return " or ".join(names.get(e, e) for e in expected)
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
    hint = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1, cutoff=0.6)
    suggestion = f"; did you mean `{hint[0]}`?" if hint else ""
    return f"{_show(value)} is not one of {choices}{suggestion}"


def _show(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _plain(message: str) -> str:
    """jsonschema's own wording, kept for the rare keywords without a custom one."""
    return message.replace("is too short", "must not be empty") if "[]" in message else message
