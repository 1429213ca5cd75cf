"""JSON schemas for a Python tool's parameters: from live type hints, or from source.

The same function is described twice. `hint_schema` reads the type objects of the
imported function (what will run); `SourceTypes` reads the annotation expressions in
its source, for `assemble render --dry-run`, which must not import project code. The
dry-run prompt has to equal the real one, so both paths build every schema through
the same small constructors below (equal dicts, equal key order) and share one
docstring parser. Where the source alone cannot say what a type is (a project class,
an Enum, a TypedDict), `SourceTypes` says so instead of guessing.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import math
import re
import types
import typing
from collections import abc
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Schema = dict[str, Any]
Converter = Callable[[Any], Any]


class SchemaError(Exception):
    """A type that JSON cannot describe; the message says which and why."""


class RuntimeOnly(SchemaError):
    """A type the source alone cannot identify: importing the module would tell."""


# --- docstrings ---------------------------------------------------------------------


@dataclass(frozen=True)
class Docstring:
    """A docstring split into the prose the model reads and per-parameter notes."""

    description: str = ""
    params: Mapping[str, str] = field(default_factory=dict)


_GOOGLE_PARAMS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "other parameters",
}
_GOOGLE_OTHER = {"returns", "return", "yields", "yield", "raises", "raise"}
_NUMPY_PARAMS = {"parameters", "other parameters"}
_NUMPY_SECTIONS = {*_NUMPY_PARAMS, "returns", "yields", "receives", "raises", "warns"}
_GOOGLE_HEADER = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*:\s*")
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)")
_REST_FIELD = re.compile(
    r":(?:param|parameter|arg|argument|key|keyword|type|raises?|except|exception"
    r"|returns?|rtype|yields?|ytype|meta)\b"
)
_REST_PARAM = re.compile(r":(?:param|parameter|arg|argument|key|keyword)\s+([^:]+?)\s*:(.*)")
_NUMPY_RULE = re.compile(r"-{3,}")
_NUMPY_ENTRY = re.compile(r"(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?")


def parse_docstring(doc: str | None) -> Docstring:
    """Description and parameter notes of a docstring already cleaned by
    `inspect.cleandoc` (which is what `ast.get_docstring(clean=True)` returns too).

    The description is everything before the first section that documents the
    signature: Google `Args:`/`Returns:`/`Raises:`, reST `:param x:` fields, NumPy
    `Parameters` over a dashed rule. Parameter notes come from any of the three styles.
    """
    if not doc:
        return Docstring()
    lines = [line.rstrip() for line in doc.splitlines()]
    end = next((i for i in range(len(lines)) if _section_kind(lines, i)), len(lines))
    description = "\n".join(lines[:end]).strip()
    params: dict[str, str] = {}
    for index in range(end, len(lines)):
        kind = _section_kind(lines, index)
        if kind == "google-params":
            params.update(_google_params(lines, index + 1))
        elif kind == "numpy-params":
            params.update(_numpy_params(lines, index + 2))
        elif kind == "rest":
            found = _REST_PARAM.fullmatch(lines[index])
            if found:
                name = found.group(1).split()[-1].lstrip("*")
                params[name] = _join([found.group(2), *_indented_after(lines, index + 1)])
    return Docstring(description, {k: v for k, v in params.items() if v})


def _section_kind(lines: Sequence[str], index: int) -> str:
    """What the line at `index` starts: a parameter section, another signature
    section, a reST field, or nothing ("")."""
    line = lines[index]
    if not line or line[0].isspace():
        return ""
    header = _GOOGLE_HEADER.fullmatch(line)
    if header:
        title = header.group(1).lower()
        if title in _GOOGLE_PARAMS:
            return "google-params"
        if title in _GOOGLE_OTHER:
            return "google"
    following = lines[index + 1] if index + 1 < len(lines) else ""
    if _NUMPY_RULE.fullmatch(following.strip()) and line.strip().lower() in _NUMPY_SECTIONS:
        return "numpy-params" if line.strip().lower() in _NUMPY_PARAMS else "numpy"
    if _REST_FIELD.match(line):
        return "rest"
    return ""


def _google_params(lines: Sequence[str], start: int) -> Iterator[tuple[str, str]]:
    """Entries of a Google section: `name (type): text`, continued on deeper lines."""
    entry_indent: int | None = None
    name = ""
    text: list[str] = []
    for line in lines[start:]:
        if not line:
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            break
        if entry_indent is None:
            entry_indent = indent
        found = _GOOGLE_ENTRY.fullmatch(line.strip()) if indent <= entry_indent else None
        if found:
            if name:
                yield name, _join(text)
            name, text = found.group(1), [found.group(2)]
        elif name:
            text.append(line)
    if name:
        yield name, _join(text)


def _numpy_params(lines: Sequence[str], start: int) -> Iterator[tuple[str, str]]:
    """Entries of a NumPy section: `name : type` lines, the text indented below."""
    index = start
    while index < len(lines):
        line = lines[index]
        if line and not line[0].isspace():
            if _section_kind(lines, index) or (
                index + 1 < len(lines) and _NUMPY_RULE.fullmatch(lines[index + 1].strip())
            ):
                return
            found = _NUMPY_ENTRY.fullmatch(line)
            text = _indented_after(lines, index + 1)
            if found:
                for name in found.group(1).split(","):
                    yield name.strip().lstrip("*"), _join(text)
            index += 1 + len(text)
        else:
            index += 1


def _indented_after(lines: Sequence[str], start: int) -> list[str]:
    """The indented (or blank) lines from `start` up to the next unindented one."""
    taken: list[str] = []
    for line in lines[start:]:
        if line and not line[0].isspace():
            break
        taken.append(line)
    while taken and not taken[-1]:
        taken.pop()
    return taken


def _join(parts: Sequence[str]) -> str:
    return " ".join(" ".join(parts).split())


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


def _is_primitive(value: Any) -> bool:
    return value is None or (
        isinstance(value, bool | int | str | float)
        and not isinstance(value, enum.Enum)
        and (not isinstance(value, float) or math.isfinite(value))
    )


def _enum_uses_values(kind: type[enum.Enum]) -> bool:
    """An Enum is offered by its values when JSON can hold them all, else by names."""
    return all(_is_primitive(member.value) for member in kind)


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
_LITERAL_VALUE = bool | int | float | str | None
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
        bad = [value for value in args if not _is_primitive(value)]
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


# --- annotations in source -----------------------------------------------------------

_SCALAR_NAMES = {
    "builtins.str": "string",
    "builtins.int": "integer",
    "builtins.float": "number",
    "builtins.bool": "boolean",
    "types.NoneType": "null",
}
_ANY_NAMES = {"typing.Any", "builtins.object"}
_SEQUENCE_NAMES = {
    "builtins.list",
    "typing.List",
    *(
        f"{module}.{name}"
        for module in ("typing", "collections.abc")
        for name in ("Sequence", "MutableSequence", "Collection", "Iterable")
    ),
}
_SET_NAMES = {
    "builtins.set",
    "typing.Set",
    "typing.AbstractSet",
    "collections.abc.Set",
    "typing.MutableSet",
    "collections.abc.MutableSet",
}
_FROZENSET_NAMES = {"builtins.frozenset", "typing.FrozenSet"}
_TUPLE_NAMES = {"builtins.tuple", "typing.Tuple"}
_MAPPING_NAMES = {
    "builtins.dict",
    "typing.Dict",
    "typing.Mapping",
    "collections.abc.Mapping",
    "typing.MutableMapping",
    "collections.abc.MutableMapping",
}


class SourceTypes:
    """Reads annotation and default expressions of one parsed module, statically.

    A name is recognised by how the module binds it: imported from `typing` or
    `collections.abc`, a builtin the module does not rebind, or a module-level alias
    (`Unit = Literal["m", "km"]`) of something recognisable. Anything else raises
    `RuntimeOnly`.
    """

    def __init__(self, tree: ast.Module) -> None:
        self._bindings: dict[str, list[ast.AST | str]] = {}
        for statement in tree.body:
            self._bind_statement(statement)
        self._expanding: set[str] = set()

    def _bind(self, name: str, target: ast.AST | str) -> None:
        self._bindings.setdefault(name, []).append(target)

    def _bind_statement(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    self._bind(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self._bind(top, top)
        elif isinstance(statement, ast.ImportFrom):
            prefix = "." * statement.level + (statement.module or "")
            for alias in statement.names:
                self._bind(alias.asname or alias.name, f"{prefix}.{alias.name}")
        elif isinstance(statement, ast.Assign):
            simple = len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
            for target in statement.targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        self._bind(node.id, statement.value if simple else statement)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            self._bind(statement.target.id, statement.value or statement)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self._bind(statement.name, statement)
        else:
            # Names bound inside `if`, `try`, loops...: which binding wins is only
            # known at run time, so record them as unknowable.
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    self._bind(node.id, statement)
                elif isinstance(node, ast.alias):
                    self._bind(node.asname or node.name.split(".")[0], statement)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self._bind(node.name, statement)

    def qualify(self, node: ast.expr) -> str | None:
        """The dotted name an expression refers to (`typing.Optional`), or None;
        `typing_extensions` names count as `typing` ones."""
        name = self._dotted(node)
        if name and name.startswith("typing_extensions."):
            return "typing." + name.removeprefix("typing_extensions.")
        return name

    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        if not isinstance(node, ast.Name):
            return None
        bound = self._bindings.get(node.id)
        if bound is None:
            return f"builtins.{node.id}" if hasattr(builtins, node.id) else None
        if len(bound) == 1 and isinstance(bound[0], str):
            return bound[0]
        return None

    def alias(self, node: ast.expr) -> ast.expr | None:
        """The value of a module-level `Name = <expr>` the node refers to, if unique."""
        if isinstance(node, ast.Name):
            bound = self._bindings.get(node.id, [])
            if len(bound) == 1 and isinstance(bound[0], ast.expr):
                return bound[0]
        return None

    def annotation(self, node: ast.expr | None) -> Schema:
        """The schema `hint_schema` gives for this annotation at run time."""
        if node is None:
            return {}
        if isinstance(node, ast.Constant):
            if node.value is None:
                return scalar("null")
            if isinstance(node.value, str):
                try:
                    parsed = ast.parse(node.value.strip(), mode="eval").body
                except SyntaxError:
                    raise RuntimeOnly(node.value) from None
                return self.annotation(parsed)
            raise RuntimeOnly(ast.unparse(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return union([self.annotation(node.left), self.annotation(node.right)])
        if isinstance(node, ast.Subscript):
            return self._generic(node)
        name = self.qualify(node)
        if name is None:
            return self._expand_alias(node)
        if name in _ANY_NAMES:
            return {}
        if name in _SCALAR_NAMES:
            return scalar(_SCALAR_NAMES[name])
        if name in _SEQUENCE_NAMES or name in _TUPLE_NAMES:
            return array(None)
        if name in _SET_NAMES or name in _FROZENSET_NAMES:
            return array(None, unique=True)
        if name in _MAPPING_NAMES:
            return mapping(None)
        raise RuntimeOnly(ast.unparse(node))

    def _expand_alias(self, node: ast.expr) -> Schema:
        value = self.alias(node)
        key = ast.unparse(node)
        if value is None or key in self._expanding:
            raise RuntimeOnly(key)
        self._expanding.add(key)
        try:
            return self.annotation(value)
        finally:
            self._expanding.discard(key)

    def _generic(self, node: ast.Subscript) -> Schema:
        name = self.qualify(node.value)
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "typing.Annotated":
            schema = self.annotation(args[0])
            return described(schema, self._annotated_note(args[1:], node))
        if name == "typing.Optional":
            return union([self.annotation(args[0]), scalar("null")])
        if name == "typing.Union":
            return union([self.annotation(arg) for arg in args])
        if name == "typing.Literal":
            return enumeration(list(self._literal_values(args)))
        if name in _TUPLE_NAMES:
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                return array(self.annotation(args[0]))
            if isinstance(node.slice, ast.Tuple) and not args:
                return array(None)
            return fixed_array([self.annotation(arg) for arg in args])
        if name in _SEQUENCE_NAMES:
            return array(self.annotation(args[0]))
        if name in _SET_NAMES or name in _FROZENSET_NAMES:
            return array(self.annotation(args[0]), unique=True)
        if name in _MAPPING_NAMES and len(args) == 2:
            if self.qualify(args[0]) not in ("builtins.str", "typing.Any"):
                raise SchemaError(
                    f"`{ast.unparse(node)}`: JSON object keys are strings, use `str` keys"
                )
            return mapping(self.annotation(args[1]))
        raise RuntimeOnly(ast.unparse(node))

    def _annotated_note(self, metadata: Sequence[ast.expr], node: ast.expr) -> str | None:
        """The first string in `Annotated[...]` metadata, as `typing` would find it."""
        for item in metadata:
            if isinstance(item, ast.Constant):
                if isinstance(item.value, str):
                    return item.value
                continue
            raise RuntimeOnly(ast.unparse(node))
        return None

    def _literal_values(self, args: Sequence[ast.expr]) -> Iterator[Any]:
        for arg in args:
            if isinstance(arg, ast.Subscript) and self.qualify(arg.value) == "typing.Literal":
                inner = arg.slice
                yield from self._literal_values(
                    list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
                )
                continue
            try:
                value = ast.literal_eval(arg)
            except ValueError:
                raise RuntimeOnly(ast.unparse(arg)) from None
            if not _is_primitive(value):
                raise SchemaError(f"Literal value {value!r} is not a JSON string, number or bool")
            yield value

    def default(self, node: ast.expr) -> Any:
        """The value of a default expression: a literal, or a module-level name bound
        once to a literal. Anything else (a call, an Enum member) raises `RuntimeOnly`."""
        target = self.alias(node) if isinstance(node, ast.Name) else node
        if target is None:
            raise RuntimeOnly(ast.unparse(node))
        try:
            return ast.literal_eval(target)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise RuntimeOnly(ast.unparse(node)) from None
