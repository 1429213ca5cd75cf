"""Parameter values from text (`--param`), JSON, defaults and every kind of problem."""

from __future__ import annotations

from typing import Any

import pytest

from assembler.errors import ParameterError
from assembler.manifest.model import ParameterSpec
from assembler.typed.parameters import Parameters, read_text_value

SPECS = (
    ParameterSpec("url", {"type": "string", "pattern": "^https://"}),
    ParameterSpec("count", {"type": "integer", "default": 3, "minimum": 1}),
    ParameterSpec("ratio", {"type": "number", "default": 0.5}),
    ParameterSpec("dry", {"type": "boolean", "default": False}),
    ParameterSpec("tags", {"type": "array", "items": {"type": "string"}, "default": []}),
    ParameterSpec("extra", {"type": "object", "default": {}}),
    ParameterSpec("level", {"enum": ["low", "high"], "default": "low"}),
    ParameterSpec("note", {"type": ["string", "null"], "default": None}),
)


@pytest.mark.parametrize(
    ("schema", "text", "value"),
    [
        ({"type": "string"}, "42", "42"),  # a string parameter takes the text as typed
        ({"type": "integer"}, "2", 2),
        ({"type": "number"}, "2", 2),
        ({"type": "number"}, "0.25", 0.25),
        ({"type": "boolean"}, "true", True),
        ({"type": "array"}, '["a", "b"]', ["a", "b"]),
        ({"type": "object"}, '{"a": 1}', {"a": 1}),
        ({"type": "null"}, "null", None),
        ({"enum": ["low", "high"]}, "low", "low"),
        ({"enum": [1, 2]}, "2", 2),
        ({"type": ["string", "null"]}, "null", None),
        ({"type": ["string", "integer"]}, "abc", "abc"),
        ({"type": "integer"}, "two", "two"),  # kept as text: validation says what is wrong
        ({}, "[1]", [1]),
    ],
)
def test_text_values_are_read_by_the_parameters_type(
    schema: dict[str, Any], text: str, value: Any
) -> None:
    assert read_text_value(schema, text) == value
    assert type(read_text_value(schema, text)) is type(value)


def test_defaults_are_filled_in_and_are_copies() -> None:
    parameters = Parameters(SPECS)
    values = parameters.bind({"url": "https://x"})
    assert values == {
        "url": "https://x",
        "count": 3,
        "ratio": 0.5,
        "dry": False,
        "tags": [],
        "extra": {},
        "level": "low",
        "note": None,
    }
    values["tags"].append("changed")
    assert parameters.bind({"url": "https://x"})["tags"] == []


def test_from_text_then_bind() -> None:
    parameters = Parameters(SPECS)
    given = parameters.from_text(
        ["url=https://x=y", "count=2", "dry=true", 'tags=["a"]', "level=high", "note=null"]
    )
    assert parameters.bind(given) == {
        "url": "https://x=y",  # only the first `=` separates
        "count": 2,
        "ratio": 0.5,
        "dry": True,
        "tags": ["a"],
        "extra": {},
        "level": "high",
        "note": None,
    }


def test_every_problem_at_once() -> None:
    parameters = Parameters(SPECS, agent="t")
    with pytest.raises(ParameterError) as caught:
        parameters.bind({"count": 0, "ratio": "x", "level": "mid", "tgas": ["a"]})
    assert caught.value.problems == (
        "tgas: not a parameter of this agent (its parameters: `url`, `count`, `ratio`, `dry`, "
        "`tags`, `extra`, `level`, `note`); did you mean `tags`?",
        "url: required (string), and not given",
        "count: 0 is less than the minimum of 1",
        "ratio: 'x' is not of type 'number'",
        "level: 'mid' is not one of ['low', 'high']",
    )
    assert str(caught.value).startswith("5 problems with the parameters of agent `t`:\n  tgas")


def test_malformed_pairs_are_problems_too() -> None:
    with pytest.raises(ParameterError) as caught:
        Parameters(SPECS).from_text(["count", "=3", "nope=1"])
    assert caught.value.problems[:2] == (
        "`count`: write a parameter as NAME=VALUE",
        "`=3`: write a parameter as NAME=VALUE",
    )
    assert caught.value.problems[2].startswith("nope: not a parameter of this agent")


def test_the_input_schema_leaves_out_fixed_parameters() -> None:
    schema = Parameters(SPECS[:3]).input_schema(fixed=["count"])
    assert schema == {
        "type": "object",
        "properties": {
            "url": {"type": "string", "pattern": "^https://"},
            "ratio": {"type": "number", "default": 0.5},
        },
        "required": ["url"],
        "additionalProperties": False,
    }
