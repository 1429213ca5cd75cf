"""`output_matches` and `output_equals`: an eval task's checks of the typed answer.

`output_matches` takes either a JSON Schema or a subset object. An object whose keys
are all JSON Schema keywords (`type`, `properties`, `required`, `enum`, ...), or that
has `$schema`, is a schema and the answer must validate against it; any other object
is a subset: each key it names must be in the answer with an equal value, objects
compared the same way key by key, anything else (arrays included) compared whole. The
evidence names every difference by its place (`$.labels[0]`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assembler.eval.spec import Check

SCHEMA_KEYWORDS = frozenset(
    {
        "$schema", "$id", "$ref", "$defs", "$comment", "type", "enum", "const", "properties",
        "required", "additionalProperties", "patternProperties", "propertyNames", "items",
        "prefixItems", "contains", "minItems", "maxItems", "uniqueItems", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "format", "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
        "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
        "unevaluatedProperties", "unevaluatedItems", "title", "description", "default",
        "examples",
    }
)  # fmt: skip
_SHOWN = 10


def is_schema(value: Any) -> bool:
    """Whether an `output_matches` object is read as a JSON Schema (see the docstring)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and ("$schema" in value or all(key in SCHEMA_KEYWORDS for key in value))
    )


def check_output(check: Check, output: Any) -> tuple[bool, str]:
    """(passed, evidence) of one `output_*` check against the run's typed answer."""
    if output is None:
        return False, "the run gave no typed answer"
    if check.kind == "output_equals":
        if json_equal(output, check.value):
            return True, "equal"
        return False, f"not equal; the answer: {_shown(output)}"
    if is_schema(check.value):
        from assembler.typed.schemas import compile_schema, schema_problems, value_errors

        problems = schema_problems(check.value)
        if problems:
            return False, f"not a valid JSON Schema: {problems[0].message}"
        errors = value_errors(compile_schema(check.value), output)
        if not errors:
            return True, "matches the schema"
        return False, "; ".join(errors)
    differences = list(_subset_differences(check.value, output, "$"))
    if not differences:
        return True, f"matches the {len(check.value)} key(s) given"
    more = len(differences) - _SHOWN
    listed = "; ".join(differences[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return False, listed


def _subset_differences(expected: Any, actual: Any, at: str) -> list[str]:
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{at}: expected an object, got {_shown(actual)}"]
        found: list[str] = []
        for key, value in expected.items():
            place = f"{at}.{key}"
            if key not in actual:
                found.append(f"{place}: missing")
            else:
                found.extend(_subset_differences(value, actual[key], place))
        return found
    if not json_equal(expected, actual):
        return [f"{at}: expected {_shown(expected)}, got {_shown(actual)}"]
    return []


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: `true` is not `1` (Python says it is); `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and isinstance(a, str) == isinstance(b, str)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:199] + "…"
