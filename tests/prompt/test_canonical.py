"""Tests for `assembler.prompt.canonical`: RFC 8785 vectors, every number form, and refusals."""

from __future__ import annotations

import datetime
import json
import math
import struct
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assembler.errors import PromptContextError
from assembler.prompt.canonical import canonical_json

DATA = Path(__file__).resolve().parents[1] / "data" / "jcs"
VECTORS = sorted(path.name for path in (DATA / "input").glob("*.json"))


def test_vectors_are_present() -> None:
    assert VECTORS == [
        "arrays.json",
        "french.json",
        "structures.json",
        "unicode.json",
        "values.json",
    ]


@pytest.mark.parametrize("name", VECTORS)
def test_rfc8785_vector(name: str) -> None:
    # The vectors hold no integers beyond 2**53 and no non-finite numbers, so the
    # default json.loads (ints as int, the rest as float) reads them exactly.
    value = json.loads((DATA / "input" / name).read_text(encoding="utf-8"))
    expected = (DATA / "output" / name).read_bytes().decode("utf-8")
    if isinstance(value, dict):
        assert canonical_json(value) == expected
    else:
        # The root must be an object, so a top-level array vector is checked inside one.
        wrapped = canonical_json({"v": value})
        assert wrapped.startswith('{"v":')
        assert wrapped.endswith("}")
        assert wrapped[len('{"v":') : -1] == expected


def _number_lines() -> list[tuple[str, str]]:
    lines = (DATA / "numbers.txt").read_text(encoding="ascii").splitlines()
    pairs = [tuple(line.split(",")) for line in lines if line.strip()]
    return [(bits, expected) for bits, expected in pairs]


def test_every_number_vector() -> None:
    pairs = _number_lines()
    assert len(pairs) > 5000
    failures = []
    for bits, expected in pairs:
        (value,) = struct.unpack(">d", bytes.fromhex(bits.zfill(16)))
        got = canonical_json({"n": value})
        if got != f'{{"n":{expected}}}':
            failures.append((bits, expected, got))
    assert failures == []


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (56.0, "56"),
        (1e30, "1e+30"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (1.2345678901234568e20, "123456789012345680000"),
        (-1.5e-10, "-1.5e-10"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1, "0.1"),
        (2**53 - 1, "9007199254740991"),
        (-(2**53 - 1), "-9007199254740991"),
        (2.0**60, "1152921504606847000"),  # shortest digits, then zeros
        (True, "true"),
        (False, "false"),
        (None, "null"),
    ],
)
def test_scalar_forms(value: object, text: str) -> None:
    assert canonical_json({"v": value}) == f'{{"v":{text}}}'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ('\b\t\n\f\r"\\', r'"\b\t\n\f\r\"\\"'),
        ("\x00\x01\x1f", r'"\u0000\u0001\u001f"'),
        ("\x7f\u2028é€", '"\x7f\u2028é€"'),
        ("/", '"/"'),
        ("\ud800", r'"\ud800"'),
        ("a\udfffb", r'"a\udfffb"'),
        ("\ud83d\ude00", '"\U0001f600"'),  # a pair held as two code points joins up
        ("\U0001f600", '"\U0001f600"'),
    ],
)
def test_string_escapes(value: str, text: str) -> None:
    assert canonical_json({"s": value}) == f'{{"s":{text}}}'


def test_keys_sorted_by_utf16_code_units() -> None:
    # U+FB01 sorts after U+1F600 in code points but before it in UTF-16 (0xD83D).
    value = {"\ufb01": 1, "\U0001f600": 2, "a": 3, "\x7f": 4}
    assert canonical_json(value) == '{"a":3,"\x7f":4,"\U0001f600":2,"\ufb01":1}'


def test_key_order_does_not_matter() -> None:
    first = {"b": 1, "a": {"y": [1, 2], "x": None}, "c": "z"}
    second = {"c": "z", "a": {"x": None, "y": [1, 2]}, "b": 1}
    assert canonical_json(first) == canonical_json(second)
    assert canonical_json(first) == '{"a":{"x":null,"y":[1,2]},"b":1,"c":"z"}'


def test_proto_is_an_ordinary_key() -> None:
    assert canonical_json({"__proto__": {"a": 1}}) == '{"__proto__":{"a":1}}'


def test_shared_object_in_sibling_positions_is_not_a_cycle() -> None:
    shared = {"k": [1, 2]}
    items = [1]
    value = {"a": shared, "b": shared, "c": [items, items]}
    assert canonical_json(value) == '{"a":{"k":[1,2]},"b":{"k":[1,2]},"c":[[1],[1]]}'


def test_tuples_and_empty_containers() -> None:
    assert canonical_json({"t": (1, "a"), "e": {}, "l": []}) == '{"e":{},"l":[],"t":[1,"a"]}'
    assert canonical_json({}) == "{}"


def test_safe_integer_limit_accepted() -> None:
    assert canonical_json({"n": 2**53 - 1}) == '{"n":9007199254740991}'


class _Thing:
    pass


def _self_dict() -> dict[str, object]:
    value: dict[str, object] = {"a": {"b": 1}}
    inner = value["a"]
    assert isinstance(inner, dict)
    inner["back"] = value
    return value


def _self_list() -> dict[str, object]:
    items: list[object] = [1, 2]
    items.append(items)
    return {"items": items}


@pytest.mark.parametrize(
    ("value", "path", "fragment"),
    [
        ({"a": float("nan")}, "$.a", "NaN is not valid JSON"),
        ({"a": {"b": [0, math.inf]}}, "$.a.b[1]", "Infinity is not valid JSON"),
        ({"a": -math.inf}, "$.a", "-Infinity is not valid JSON"),
        (_self_dict(), "$.a.back", "reference cycle"),
        (_self_list(), "$.items[2]", "reference cycle"),
        ({"a": {3: "x"}}, "$.a", "dict key 3 is an int; JSON object keys must be strings"),
        ({"my key": datetime.date(2024, 1, 2)}, '$["my key"]', "datetime.date value is not JSON"),
        (
            {"items": [0, 1, 2, datetime.datetime(2024, 1, 2, 3, 4)]},
            "$.items[3]",
            "datetime.datetime value is not JSON; write it as a string",
        ),
        ({"s": {1, 2}}, "$.s", "set value is not JSON"),
        ({"s": frozenset()}, "$.s", "frozenset value is not JSON"),
        ({"b": b"x"}, "$.b", "bytes value is not JSON"),
        ({"d": Decimal("1.5")}, "$.d", "decimal.Decimal value is not JSON"),
        ({"o": [_Thing()]}, "$.o[0]", "_Thing value is not JSON"),
        ({"n": 2**53}, "$.n", "integer 9007199254740992 is outside"),
        ({"n": -(2**53)}, "$.n", "integer -9007199254740992 is outside"),
        ([1, 2], "$", "must be a JSON object"),
        ("text", "$", "must be a JSON object"),
    ],
)
def test_rejections_name_the_path(value: object, path: str, fragment: str) -> None:
    with pytest.raises(PromptContextError) as caught:
        canonical_json(value)
    assert caught.value.path == path
    assert fragment in str(caught.value)
    assert str(caught.value).endswith(f" at {path}")


def test_error_after_valid_siblings_still_names_the_right_path() -> None:
    value = {"a": 1, "b": {"c": "ok", "d": [True, None, {"e": float("nan")}]}}
    with pytest.raises(PromptContextError) as caught:
        canonical_json(value)
    assert caught.value.path == "$.b.d[2].e"


def test_failed_call_leaves_no_state_behind() -> None:
    shared: dict[str, object] = {"x": 1}
    with pytest.raises(PromptContextError):
        canonical_json({"a": shared, "b": float("nan")})
    assert canonical_json({"a": shared, "b": shared}) == '{"a":{"x":1},"b":{"x":1}}'


_SAFE = 2**53 - 1
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-_SAFE, max_value=_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@given(st.dictionaries(st.text(max_size=8), _json_values, max_size=6))
def test_round_trip_and_idempotence(value: dict[str, object]) -> None:
    out = canonical_json(value)
    # Integral floats print without a fraction ("1e+20" style only from 1e21 on), so
    # read integers back as floats: a float like 1.2345678901234568e20 prints as
    # 123456789012345680000, which only equals the original when read as a float.
    # Safe ints convert to float exactly; -0.0 == 0 and 1.0 == 1 compare equal.
    back = json.loads(out, parse_int=float)
    assert back == value
    assert canonical_json(back) == out
