"""Canonical JSON (RFC 8785, JCS) for the prompt's `context:` line and for cache keys.

One function, so the text the model sees and the key a cache stores under can never
drift apart: equal contexts give byte-identical text whatever the key order in the
manifest. RFC 8785 is used rather than `json.dumps(sort_keys=True)` because its
number and string forms are defined exactly (ECMAScript `JSON.stringify`), so the
text is stable across Python versions and matches other JCS implementations.

Values that JSON cannot hold exactly are refused with a `PromptContextError` naming
the JSON path, instead of being coerced: a silently rounded integer or a stringified
date would change the prompt without the user seeing why.

It runs on every cache-key computation, so it is a plain recursive walk with exact
type checks first; paths are only built when something fails.
"""

from __future__ import annotations

import datetime
import math
import re
from json.encoder import encode_basestring
from typing import cast

from assembler.errors import PromptContextError

__all__ = ["canonical_json", "context_problems"]

_MAX_SAFE_INT = 2**53 - 1
_FLOAT_EXACT_LIMIT = 9007199254740992.0  # 2.0**53: integral floats below print as ints
_INF = float("inf")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Invalid(Exception):
    """Raised at the bad value; each container on the way up adds its path segment."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.segments: list[str | int] = []


def canonical_json(value: object) -> str:
    """Return the RFC 8785 canonical JSON text of `value`, which must be a dict.

    Raises `PromptContextError` (with the JSON path, e.g. `$.items[3]`) for anything
    that is not exactly representable: NaN/infinity, cycles, non-string keys, integers
    beyond +-(2**53-1), and any type other than str, int, float, bool, None,
    list/tuple and dict.
    """
    if not isinstance(value, dict):
        raise PromptContextError(
            f"the context must be a JSON object (a mapping), not {_a_type(value)}"
        )
    try:
        return _object(value, set())
    except _Invalid as error:
        raise PromptContextError(error.message, _format_path(error.segments)) from None


def context_problems(value: object) -> list[PromptContextError]:
    """Every value `canonical_json` would refuse, each with its JSON path, for
    `assemble validate` to report all at once (`canonical_json` stops at the first,
    since it runs on every cache key). Leaves are judged by the same encoder."""
    if not isinstance(value, dict):
        return [
            PromptContextError(
                f"the context must be a JSON object (a mapping), not {_a_type(value)}"
            )
        ]
    found: list[PromptContextError] = []
    _collect(value, [], set(), found)
    return found


def _collect(
    value: object, segments: list[str | int], active: set[int], found: list[PromptContextError]
) -> None:
    """Walk containers (checking keys and cycles as `_object`/`_array` do); hand each
    leaf to `_encode` and record what it refuses. `segments` run outermost first."""

    def refuse(message: str) -> None:
        found.append(PromptContextError(message, _format_path(segments[::-1])))

    if not isinstance(value, dict | list | tuple):
        try:
            _encode(value, active)
        except _Invalid as error:
            refuse(error.message)
        return
    if id(value) in active:
        kind = "object" if isinstance(value, dict) else "list"
        refuse(f"this {kind} contains itself (a reference cycle); JSON cannot hold it")
        return
    active.add(id(value))
    try:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    _collect(item, [*segments, key], active, found)
                else:
                    refuse(_key_message(key))
        else:
            for index, item in enumerate(value):
                _collect(item, [*segments, index], active, found)
    finally:
        active.discard(id(value))


def _encode(value: object, active: set[int]) -> str:
    """Serialise one value; exact type checks first because this is the hot path."""
    if type(value) is str:
        return encode_basestring(value) if value.isascii() else _string(value)
    if type(value) is dict:
        return _object(value, active)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return _integer(value)
    if type(value) is float:
        return _number(value)
    if type(value) is list or type(value) is tuple:
        return _array(value, active)
    return _encode_other(value, active)


def _encode_other(value: object, active: set[int]) -> str:
    """Subclasses of the JSON types (IntEnum, OrderedDict, namedtuple, ...) and errors."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(str.__str__(value))
    if isinstance(value, int):
        return _integer(int.__int__(value))
    if isinstance(value, float):
        return _number(float.__float__(value))
    if isinstance(value, dict):
        return _object(value, active)
    if isinstance(value, list | tuple):
        return _array(value, active)
    raise _Invalid(_unsupported_message(value))


def _object(value: dict[object, object], active: set[int]) -> str:
    """Members sorted by UTF-16 code units, as RFC 8785 section 3.2.3 requires."""
    ident = id(value)
    if ident in active:
        raise _Invalid("this object contains itself (a reference cycle); JSON cannot hold it")
    members = cast("dict[str, object]", value)  # checked by the join just below
    try:
        keys_text = "".join(members)
    except TypeError:
        for member in value:
            if not isinstance(member, str):
                raise _Invalid(_key_message(member)) from None
        raise  # pragma: no cover - join only fails on a non-str key
    ascii_keys = keys_text.isascii()
    # Code-point order (plain sorted) differs from UTF-16 order only above U+FFFF.
    keys = sorted(members) if ascii_keys else sorted(members, key=_utf16_sort_key)
    quote = encode_basestring if ascii_keys else _string
    active.add(ident)
    key = ""
    try:
        parts = []
        for key in keys:
            parts.append(quote(key) + ":" + _encode(members[key], active))
        return "{" + ",".join(parts) + "}"
    except _Invalid as error:
        error.segments.append(key)
        raise
    finally:
        active.discard(ident)


def _array(value: list[object] | tuple[object, ...], active: set[int]) -> str:
    """Elements in order; the id stays in `active` only while we are inside it."""
    ident = id(value)
    if ident in active:
        raise _Invalid("this list contains itself (a reference cycle); JSON cannot hold it")
    active.add(ident)
    index = 0
    try:
        parts = []
        for index, item in enumerate(value):  # noqa: B007 - read in the except below
            parts.append(_encode(item, active))
        return "[" + ",".join(parts) + "]"
    except _Invalid as error:
        error.segments.append(index)
        raise
    finally:
        active.discard(ident)


def _string(value: str) -> str:
    """ECMAScript JSON.stringify escaping; str is treated as UTF-16, as JCS assumes.

    A surrogate pair held as two code points becomes the real character; a lone
    surrogate cannot be written as UTF-8, so it is escaped as `\\udxxx`.
    """
    if value.isascii() or not _LONE_SURROGATE.search(value):
        return encode_basestring(value)
    joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE_SURROGATE.sub(_escape_surrogate, encode_basestring(joined))


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _utf16_sort_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _integer(value: int) -> str:
    """Python ints beyond 2**53 would be silently rounded by JSON readers: refuse them."""
    if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return str(value)
    raise _Invalid(
        f"integer {value} is outside the range JSON numbers hold exactly "
        "(-(2**53-1) to 2**53-1); write it as a string"
    )


def _number(value: float) -> str:
    """ECMAScript Number::toString, laid out from Python's shortest round-trip repr."""
    if -_FLOAT_EXACT_LIMIT < value < _FLOAT_EXACT_LIMIT and value.is_integer():
        return str(int(value))  # also turns -0.0 into "0"
    magnitude = abs(value)
    if 1e-4 <= magnitude < _FLOAT_EXACT_LIMIT:
        return repr(value)  # non-integral: repr is already fixed-point, as ECMAScript
    if math.isnan(value):
        raise _Invalid("NaN is not valid JSON")
    if magnitude == _INF:
        raise _Invalid(f"{'-' if value < 0 else ''}Infinity is not valid JSON")
    return _layout_number(repr(value))


def _layout_number(text: str) -> str:
    """Rearrange repr's digits into ECMAScript's layout (ECMA-262 Number::toString)."""
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent_text = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    # value = 0.DIGITS * 10**point
    point = len(whole) + (int(exponent_text) if exponent_text else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    exponent = point - 1
    exponent_sign = "+" if exponent >= 0 else "-"
    head = digits[0] + ("." + digits[1:] if count > 1 else "")
    return f"{sign}{head}e{exponent_sign}{abs(exponent)}"


def _format_path(segments: list[str | int]) -> str:
    """`$`, `$.a.b`, `$.items[3]`, `$["my key"]`: segments arrive innermost first."""
    parts = ["$"]
    for segment in reversed(segments):
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _IDENTIFIER.match(segment):
            parts.append("." + segment)
        else:
            parts.append("[" + encode_basestring(segment) + "]")
    return "".join(parts)


def _type_name(value: object) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def _a_type(value: object) -> str:
    """`an int`, `a list`, `None`: for messages."""
    if value is None:
        return "None"
    name = _type_name(value)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _key_message(key: object) -> str:
    return f"dict key {key!r} is {_a_type(key)}; JSON object keys must be strings"


def _unsupported_message(value: object) -> str:
    """Say what the value is and what to write instead."""
    name = _type_name(value)
    if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
        return f"{name} value is not JSON; write it as a string"
    if isinstance(value, set | frozenset):
        return f"{name} value is not JSON; write it as a list"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"{name} value is not JSON; decode it to a string"
    if name == "decimal.Decimal":
        return f"{name} value is not JSON; write it as a float or a string"
    return (
        f"{name} value is not JSON; context values must be strings, numbers, "
        "booleans, null, lists or objects"
    )
