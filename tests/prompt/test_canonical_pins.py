"""Pins for `prompt.canonical` (issue 28, mutation round 6): what a user reads when a
context cannot be JSON, that `validate` reports exactly what a render would refuse, and
canonical forms that must not move (values built in Python, keys no UTF-8 can hold).
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict, namedtuple
from decimal import Decimal

import pytest

from assembler.errors import PromptContextError
from assembler.prompt.canonical import canonical_json, context_problems


class _Thing:
    pass


def _dict_cycle() -> dict[str, object]:
    inner: dict[str, object] = {"b": 1}
    value: dict[str, object] = {"a": inner}
    inner["back"] = value
    return value


def _list_cycle() -> dict[str, object]:
    items: list[object] = [1, 2]
    items.append(items)
    return {"items": items}


REFUSED = {
    "a dict that contains itself": (
        _dict_cycle,
        "this object contains itself (a reference cycle); JSON cannot hold it",
        "$.a.back",
    ),
    "a list that contains itself": (
        _list_cycle,
        "this list contains itself (a reference cycle); JSON cannot hold it",
        "$.items[2]",
    ),
    "an int key": (
        lambda: {"a": {3: "x"}},
        "dict key 3 is an int; JSON object keys must be strings",
        "$.a",
    ),
    "NaN": (lambda: {"n": [math.nan]}, "NaN is not valid JSON", "$.n[0]"),
    "a list": (lambda: [1], "the context must be a JSON object (a mapping), not a list", "$"),
    "an int": (lambda: 3, "the context must be a JSON object (a mapping), not an int", "$"),
    "None": (lambda: None, "the context must be a JSON object (a mapping), not None", "$"),
    "a set": (lambda: {"s": {1}}, "set value is not JSON; write it as a list", "$.s"),
    "bytes": (lambda: {"b": b"x"}, "bytes value is not JSON; decode it to a string", "$.b"),
    "a Decimal": (
        lambda: {"d": Decimal("1.5")},
        "decimal.Decimal value is not JSON; write it as a float or a string",
        "$.d",
    ),
    "an object": (
        lambda: {"o": _Thing()},
        f"{_Thing.__module__}._Thing value is not JSON; context values must be strings, "
        "numbers, booleans, null, lists or objects",
        "$.o",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_refused_context_says_what_it_is_and_what_to_write_instead(case: str) -> None:
    make, message, path = REFUSED[case]
    with pytest.raises(PromptContextError) as caught:
        canonical_json(make())
    assert caught.value.reason == message
    assert caught.value.path == path


@pytest.mark.parametrize("case", REFUSED)
def test_validate_reports_exactly_what_a_render_would_refuse(case: str) -> None:
    # `validate` lists the problems with `context_problems`; a render stops at the
    # first with `canonical_json`: the two must agree on the words and the place.
    make, message, path = REFUSED[case]
    problems = context_problems(make())
    assert [(p.reason, p.path) for p in problems] == [(message, path)]


def test_validate_lists_every_problem_of_a_context_at_once() -> None:
    value = {"a": {1: "x"}, "b": [math.inf, {"c": _dict_cycle()}], "ok": [1, {"d": "e"}]}
    found = [(p.path, p.reason) for p in context_problems(value)]
    assert found == [
        ("$.a", "dict key 1 is an int; JSON object keys must be strings"),
        ("$.b[0]", "Infinity is not valid JSON"),
        ("$.b[1].c.a.back", "this object contains itself (a reference cycle); JSON cannot hold it"),
    ]


class _Colour(enum.StrEnum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Ratio(float):
    pass


_Pair = namedtuple("_Pair", "left right")


def test_values_built_in_python_render_as_the_plain_json_they_hold() -> None:
    # A context passed from Python may hold subclasses of the JSON types: each is
    # written as its plain value, exactly as the base type would be.
    value = {
        "colour": _Colour.RED,
        "level": _Level.HIGH,
        "ratio": _Ratio(0.5),
        "pair": _Pair(1, "b"),
        "ordered": OrderedDict([("z", 1), ("a", 2)]),
    }
    plain = {
        "colour": "red",
        "level": 3,
        "ratio": 0.5,
        "pair": [1, "b"],
        "ordered": {"z": 1, "a": 2},
    }
    expected = '{"colour":"red","level":3,"ordered":{"a":2,"z":1},"pair":[1,"b"],"ratio":0.5}'
    assert canonical_json(value) == expected
    assert canonical_json(plain) == expected
    assert context_problems(value) == []


def test_a_key_no_utf8_can_hold_is_escaped_and_sorted_by_utf16_units() -> None:
    # A lone surrogate cannot be written as UTF-8: as a key, as a value, it is escaped
    # (RFC 8785 writes strings as JSON.stringify does), and it sorts by its code unit.
    value = {"\ud800": 1, "\u00e9": 2, "\U0001f600": 3}
    assert canonical_json(value) == '{"\u00e9":2,"\\ud800":1,"\U0001f600":3}'
    assert canonical_json(value).encode("utf-8")  # the text is valid UTF-8
