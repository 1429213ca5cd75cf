"""JSON schemas for a Python tool's parameters, and how to convert values back.

`hint_schema` reads the type objects of the imported function (what will run);
`python_source_types.SourceTypes` reads the annotation expressions in its source, for
`assemble render --dry-run`, which must not import project code. The dry-run prompt
has to equal the real one, so both build every schema through the small constructors
below (equal dicts, equal key order).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assembler.python_source import building_syntax_trees

Schema = dict[str, Any]
Converter = Callable[[Any], Any]


class SchemaError(Exception):
    """A type that JSON cannot describe; the message says which and why."""


class RuntimeOnly(SchemaError):
    """A type the source alone cannot identify: importing the module would tell."""


# --- constructors shared by both paths ----------------------------------------------

NO_DEFAULT: Any = object()
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (type(None), "null"),
)


def scalar(json_type: str) -> Schema:
    return {"type": json_type}


def array(items: Schema | None, *, unique: bool = False) -> Schema:
    schema: Schema = {"type": "array"}
    if items:
        schema["items"] = items
    if unique:
        schema["uniqueItems"] = True
    return schema


def fixed_array(items: Sequence[Schema]) -> Schema:
    """A tuple of known length: one schema per position."""
    return {
        "type": "array",
        "prefixItems": list(items),
        "minItems": len(items),
        "maxItems": len(items),
    }


def mapping(values: Schema | None) -> Schema:
    schema: Schema = {"type": "object"}
    if values:
        schema["additionalProperties"] = values
    return schema


def enumeration(values: Sequence[Any]) -> Schema:
    """`enum`, with a `type` when all values have the same JSON type."""
    unique: list[Any] = []
    for value in values:
        if not any(type(value) is type(seen) and value == seen for seen in unique):
            unique.append(value)
    kinds = {_json_type(value) for value in unique}
    schema: Schema = {"type": kinds.pop()} if len(kinds) == 1 else {}
    schema["enum"] = unique
    return schema


def union(members: Sequence[Schema]) -> Schema:
    """One of several schemas: a `type` list when every member is a bare type."""
    flat: list[Schema] = []
    for member in members:
        for part in member["anyOf"] if list(member) == ["anyOf"] else [member]:
            if not part:
                return {}
            if part not in flat:
                flat.append(part)
    if len(flat) == 1:
        return flat[0]
    if all(list(part) == ["type"] for part in flat):
        names: list[str] = []
        for part in flat:
            for name in part["type"] if isinstance(part["type"], list) else [part["type"]]:
                if name not in names:
                    names.append(name)
        return {"type": names}
    return {"anyOf": flat}


def described(schema: Schema, text: str | None) -> Schema:
    if not text or "description" in schema:
        return schema
    return {**schema, "description": text}


def with_default(schema: Schema, default: Any) -> Schema:
    """Add `default` when there is one that JSON can hold (see `json_value`)."""
    if default is NO_DEFAULT:
        return schema
    ok, value = json_value(default)
    return {**schema, "default": value} if ok else schema


def record(properties: Mapping[str, Schema], required: Sequence[str]) -> Schema:
    """A closed object: the function's arguments, a TypedDict, a dataclass."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def json_value(value: Any) -> tuple[bool, Any]:
    """`(True, value as JSON)` for values JSON holds exactly, else `(False, None)`.

    Tuples become lists and Enum members their schema value, as the model sends them.
    """
    if isinstance(value, enum.Enum):
        return json_value(value.value if _enum_uses_values(type(value)) else value.name)
    if value is None or isinstance(value, bool):
        return True, value
    if isinstance(value, str):
        return True, str(value)
    if isinstance(value, int):
        return True, int(value)
    if isinstance(value, float):
        return (True, float(value)) if math.isfinite(value) else (False, None)
    if isinstance(value, list | tuple):
        items = [json_value(item) for item in value]
        return (True, [v for _, v in items]) if all(ok for ok, _ in items) else (False, None)
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        pairs = {key: json_value(item) for key, item in value.items()}
        if all(ok for ok, _ in pairs.values()):
            return True, {key: v for key, (_, v) in pairs.items()}
        return False, None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return False, None


def _json_type(value: Any) -> str:
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind))


def is_primitive(value: Any) -> bool:
    """A JSON string, number, bool or null (an Enum member is not, whatever its value)."""
    return value is None or (
        isinstance(value, bool | int | str | float)
        and not isinstance(value, enum.Enum)
        and (not isinstance(value, float) or math.isfinite(value))
    )


def _enum_uses_values(kind: type[enum.Enum]) -> bool:
    """An Enum is offered by its values when JSON can hold them all, else by names."""
    return all(is_primitive(member.value) for member in kind)


# --- live type hints -----------------------------------------------------------------


@dataclass(frozen=True)
class Derived:
    """A schema and how to turn a JSON value that fits it back into the Python type
    (`None`: the value is used as it is)."""

    schema: Schema
    convert: Converter | None = None


_SEQUENCES: tuple[Any, ...] = (
    list,
    abc.Sequence,
    abc.MutableSequence,
    abc.Collection,
    abc.Iterable,
)
_SETS: tuple[Any, ...] = (set, frozenset, abc.Set, abc.MutableSet)
_MAPPINGS: tuple[Any, ...] = (dict, abc.Mapping, abc.MutableMapping)
_FIELD_WRAPPERS = (typing.Required, typing.NotRequired)


def hint_schema(hint: Any) -> Derived:
    """The schema of one resolved type hint (`typing.get_type_hints(include_extras=True)`)."""
    return _hint(hint, ())


def _hint(hint: Any, seen: tuple[type, ...]) -> Derived:
    if hint is Any or hint is object:
        return Derived({})
    if hint is None or hint is type(None):
        return Derived(scalar("null"))
    if hint is bool or hint is str:
        return Derived(scalar("boolean" if hint is bool else "string"))
    if hint is int:
        return Derived(scalar("integer"), _to_int)
    if hint is float:
        return Derived(scalar("number"), _to_float)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        inner = _hint(args[0], seen)
        note = next((item for item in args[1:] if isinstance(item, str)), None)
        return Derived(described(inner.schema, note), inner.convert)
    if origin is typing.Union or origin is types.UnionType:
        return _union([_hint(arg, seen) for arg in args])
    if origin is typing.Literal:
        bad = [value for value in args if not is_primitive(value)]
        if bad:
            raise SchemaError(f"Literal value {bad[0]!r} is not a JSON string, number or bool")
        return Derived(enumeration(args))
    base = origin or hint
    if base is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _sequence(_hint(args[0], seen), tuple)
        if not args:
            return _sequence(Derived({}), tuple)
        parts = [_hint(arg, seen) for arg in args]
        return Derived(fixed_array([p.schema for p in parts]), _tuple_converter(parts))
    if base in _SEQUENCES:
        return _sequence(_hint(args[0] if args else Any, seen), None)
    if base in _SETS:
        kind = frozenset if base is frozenset else set
        return _sequence(_hint(args[0] if args else Any, seen), kind)
    if base in _MAPPINGS:
        if args and args[0] not in (str, Any):
            raise SchemaError(f"`{_name(hint)}`: JSON object keys are strings, use `str` keys")
        return _mapping(_hint(args[1] if args else Any, seen))
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _enum(hint)
        if hint in seen:
            raise SchemaError(f"`{hint.__name__}` refers to itself; JSON schemas here cannot")
        if typing.is_typeddict(hint):
            return _typeddict(hint, (*seen, hint))
        if dataclasses.is_dataclass(hint):
            return _dataclass(hint, (*seen, hint))
    raise SchemaError(f"type `{_name(hint)}` cannot be described as JSON")


def _name(hint: Any) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__
    return repr(hint).replace("typing.", "")


def _to_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _to_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _union(members: Sequence[Derived]) -> Derived:
    with building_syntax_trees():  # its first import parses Python: see python_source
        from jsonschema import Draft202012Validator

    schema = union([member.schema for member in members])
    if all(member.convert is None for member in members):
        return Derived(schema)
    checks = [
        (Draft202012Validator(member.schema), member.convert)
        for member in members
        if member.convert is not None
    ]

    def convert(value: Any) -> Any:
        for validator, to_python in checks:
            if validator.is_valid(value):
                return to_python(value)
        return value

    return Derived(schema, convert)


def _sequence(items: Derived, kind: Callable[[Any], Any] | None) -> Derived:
    unique = kind in (set, frozenset)
    schema = array(items.schema, unique=unique)
    to_item = items.convert
    if to_item is None and kind is None:
        return Derived(schema)
    make = kind or list

    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return make(value if to_item is None else [to_item(item) for item in value])

    return Derived(schema, convert)


def _tuple_converter(parts: Sequence[Derived]) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return tuple(
            item if part.convert is None else part.convert(item)
            for part, item in zip(parts, value, strict=False)
        )

    return convert


def _mapping(values: Derived) -> Derived:
    schema = mapping(values.schema)
    to_value = values.convert
    if to_value is None:
        return Derived(schema)

    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {key: to_value(item) for key, item in value.items()}

    return Derived(schema, convert)


def _enum(kind: type[enum.Enum]) -> Derived:
    if _enum_uses_values(kind):
        return Derived(enumeration([member.value for member in kind]), kind)
    names = [member.name for member in kind]
    return Derived(enumeration(names), lambda value: kind[value] if value in names else value)


def _field_hints(kind: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(kind, include_extras=True)
    except Exception as exc:
        raise SchemaError(f"cannot resolve the types of `{kind.__qualname__}`: {exc}") from exc


def _field(kind: type, name: str, hint: Any, seen: tuple[type, ...]) -> Derived:
    try:
        return _hint(hint, seen)
    except SchemaError as exc:
        raise SchemaError(f"field `{kind.__qualname__}.{name}`: {exc}") from exc


def _typeddict(kind: type, seen: tuple[type, ...]) -> Derived:
    """A TypedDict as a closed object.

    An explicit `Required[...]`/`NotRequired[...]` decides; otherwise the class's
    totality does (`__required_keys__` misses the wrappers when annotations are
    strings, as under `from __future__ import annotations` before Python 3.12).
    """
    hints = _field_hints(kind)
    required_keys: frozenset[str] = getattr(kind, "__required_keys__", frozenset())
    fields: dict[str, Derived] = {}
    required: list[str] = []
    for key, declared in hints.items():
        hint, wrapper = declared, None
        while typing.get_origin(hint) in _FIELD_WRAPPERS:
            wrapper = wrapper or typing.get_origin(hint)
            hint = typing.get_args(hint)[0]
        fields[key] = _field(kind, key, hint, seen)
        if wrapper is typing.Required or (wrapper is None and key in required_keys):
            required.append(key)
    schema = record({key: part.schema for key, part in fields.items()}, required)
    return Derived(schema, _fields_converter(fields, None))


def _dataclass(kind: type, seen: tuple[type, ...]) -> Derived:
    hints = _field_hints(kind)
    fields: dict[str, Derived] = {}
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for item in dataclasses.fields(kind):
        if not item.init:
            continue
        part = _field(kind, item.name, hints.get(item.name, Any), seen)
        fields[item.name] = part
        default = NO_DEFAULT if item.default is dataclasses.MISSING else item.default
        properties[item.name] = with_default(part.schema, default)
        if default is NO_DEFAULT and item.default_factory is dataclasses.MISSING:
            required.append(item.name)
    return Derived(record(properties, required), _fields_converter(fields, kind))


def _fields_converter(fields: Mapping[str, Derived], kind: type | None) -> Converter | None:
    """Convert each field's value; build the dataclass (`kind`) when there is one."""
    converters = {key: part.convert for key, part in fields.items() if part.convert is not None}
    if not converters and kind is None:
        return None

    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        items = {
            key: converters[key](item) if key in converters else item for key, item in value.items()
        }
        return items if kind is None else kind(**items)

    return convert
