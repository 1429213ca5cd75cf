"""The fast predicate is sure or defers: it never calls valid what jsonschema calls
invalid, and it does say valid for the valid values typed answers are made of."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from assembler.typed.fastcheck import compile_fast
from assembler.typed.schemas import compile_schema, value_errors

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "minimum": 1}}},
    {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"const": "x"}], "items": {"type": "integer"}},
    {"enum": [1, "1", True, None, 2.5]},
    {"const": False},
    {"type": ["string", "null"], "maxLength": 2, "pattern": "^a"},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10, "multipleOf": 2},
    {"type": "object", "additionalProperties": False, "properties": {"a": True},
     "patternProperties": {"^x": {"type": "string"}}},
    {"type": "object", "propertyNames": {"maxLength": 2}, "minProperties": 1, "maxProperties": 2},
    {"anyOf": [{"type": "string"}, {"type": "integer"}], "allOf": [{"not": {"const": 3}}]},
    {"anyOf": [{"type": "string"}, {"type": "integer", "maximum": 5}]},
    {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}},
                     "additionalProperties": {"type": "integer"}}},
     "$ref": "#/$defs/n"},
    {"type": "integer"},
    {"type": "object", "properties": {"a": {"enum": ["p0", "p1"]}}, "required": ["a", "b"]},
]  # fmt: skip

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-20, 20), st.floats(allow_nan=True),
    st.sampled_from([0.0, 1.0, 2.0, 4.0, 4.5, "", "a", "ab", "abc", "1", "x", "p0", math.inf]),
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "x1", "xy", "next", "long"]), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(SCHEMAS))), VALUES)
def test_never_valid_where_jsonschema_says_invalid(index: int, value: Any) -> None:
    schema = SCHEMAS[index]
    fast = compile_fast(schema)
    if fast is not None and fast(value):
        assert Draft202012Validator(schema).is_valid(value)
    assert compile_schema(schema).is_valid(value) is Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (SCHEMAS[0], {"a": 2, "b": [1]}),
        (SCHEMAS[1], ["a", "b"]),
        (SCHEMAS[2], ["x", 1, 2.0]),
        (SCHEMAS[3], 1.0),
        (SCHEMAS[3], None),
        (SCHEMAS[5], "ab"),
        (SCHEMAS[6], 4),
        (SCHEMAS[7], {"a": 1, "x9": "s"}),
        (SCHEMAS[10], 5),
        (SCHEMAS[11], {"next": {"next": {"z": 1}}}),
    ],
)
def test_valid_values_are_called_valid_without_jsonschema(schema: Any, value: Any) -> None:
    fast = compile_fast(schema)
    assert fast is not None and fast(value) is True


@pytest.mark.parametrize(
    "schema",
    [
        {"not": {"type": "string"}},  # would turn a "not sure" into "valid"
        {"oneOf": [{"type": "string"}]},
        {"if": {"type": "string"}, "then": {"minLength": 1}},
        {"uniqueItems": True},
        {"$anchor": "a"},
        {"enum": [[1]]},
        {"multipleOf": 0.5},
        {"$ref": "other.json"},
        {"ref": "#/x"},  # not a keyword jsonschema knows: left to it (which ignores it)
    ],
)
def test_what_it_does_not_implement_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_fast(schema) is None


def test_errors_still_come_from_jsonschema() -> None:
    compiled = compile_schema(SCHEMAS[0])
    assert value_errors(compiled, {"a": 0}) == ["$.a: 0 is less than the minimum of 1"]
