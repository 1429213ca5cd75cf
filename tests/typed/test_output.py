"""The output contract: answers from tool arguments and from text, wrapped and not,
size limits, and the schema's problems found before anything runs."""

from __future__ import annotations

import json

from assembler.typed.output import MAX_OUTPUT_BYTES, OutputContract
from assembler.typed.samples import sample_values
from assembler.typed.schemas import schema_problems

SCHEMA = {
    "type": "object",
    "required": ["priority"],
    "properties": {"priority": {"enum": ["p0", "p1"]}},
}


def test_an_answer_from_tool_arguments() -> None:
    contract = OutputContract(SCHEMA)
    assert contract.from_arguments({"priority": "p0"}).value == {"priority": "p0"}
    verdict = contract.from_arguments({"priority": "p7"})
    assert not verdict.valid
    assert verdict.errors == ("$.priority: 'p7' is not one of ['p0', 'p1']",)
    assert contract.from_arguments(None, problem="bad JSON").errors == ("bad JSON",)


def test_an_answer_from_text_plain_or_fenced() -> None:
    contract = OutputContract(SCHEMA)
    assert contract.from_text('{"priority": "p1"}').value == {"priority": "p1"}
    assert contract.from_text('```json\n{"priority": "p1"}\n```').value == {"priority": "p1"}
    assert contract.from_text("p1").errors[0].startswith("the reply is not JSON")
    assert contract.from_text("[1]").errors == ("the reply must be a JSON object",)


def test_a_non_object_schema_is_wrapped_on_the_wire() -> None:
    contract = OutputContract({"type": "integer"})
    assert contract.wire_schema["required"] == ["value"]
    assert contract.from_arguments({"value": 3}).value == 3
    assert contract.from_arguments({"answer": 3}).errors == (
        'the answer must be an object with one key, "value"',
    )


def test_an_answer_over_the_limit_is_refused_before_it_is_parsed() -> None:
    contract = OutputContract(SCHEMA)
    text = json.dumps({"priority": "p0", "pad": "x" * MAX_OUTPUT_BYTES})
    (error,) = contract.from_text(text).errors
    assert (
        error == "the answer is 4.0 MiB of JSON; an answer may be at most 4 MiB: give a shorter one"
    )


def test_schema_problems_name_their_place() -> None:
    problems = schema_problems(
        {
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/missing"},
                "b": {"type": "strin"},
                "c": {"type": "string", "pattern": "(["},
                "d": {"$ref": "other.json"},
            },
        }
    )
    places = [".".join(map(str, p.path)) for p in problems]
    assert "properties.b.type" in places
    assert "properties.c.pattern" in places
    assert "properties.a.$ref" in places
    assert "properties.d.$ref" in places
    assert schema_problems(SCHEMA) == []


def test_sample_values_prefer_defaults_then_enums_then_types() -> None:
    assert sample_values(
        {
            "a": {"type": "integer", "default": 7},
            "b": {"enum": ["x", "y"]},
            "c": {"type": "integer", "minimum": 5},
            "d": {"type": "boolean"},
            "e": {},
        }
    ) == {"a": 7, "b": "x", "c": 5, "d": True, "e": "example"}
