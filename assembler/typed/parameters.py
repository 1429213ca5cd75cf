"""An agent's declared parameters at run time: values checked, defaults filled in.

Values arrive from the command line as text (`--param max_labels=2`, read by the
parameter's type), from a JSON file, the SDK, RPC, an eval task or a parent agent's
tool call. Whatever the source, `Parameters.bind` checks all of them at once and
raises one `ParameterError` listing every problem (an unknown name with a "did you
mean", a required one missing, each value that does not match its schema) before
anything reaches a model. Each parameter's schema is compiled once, when the agent is
built.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assembler.errors import ParameterError
from assembler.manifest.model import ParameterSpec
from assembler.typed.schemas import compile_schema, value_errors

_JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")


class Parameters:
    """The parameters of one agent, compiled (empty when it declares none)."""

    def __init__(self, specs: Sequence[ParameterSpec], *, agent: str = "") -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.agent = agent
        self._validators: dict[str, Any] = {}

    def __bool__(self) -> bool:
        return bool(self.specs)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.specs)

    def _validator(self, name: str) -> Any:
        validator = self._validators.get(name)
        if validator is None:
            validator = self._validators[name] = compile_schema(self.specs[name].schema)
        return validator

    def bind(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The values to use: `given`, checked, with the defaults of those not given.
        Raises `ParameterError` naming every problem at once."""
        given = dict(given or {})
        problems: list[str] = []
        for name in given:
            if name not in self.specs:
                problems.append(self._unknown(name))
        values: dict[str, Any] = {}
        for name, spec in self.specs.items():
            if name in given:
                errors = value_errors(self._validator(name), given[name], prefix=name)
                problems.extend(errors)
                values[name] = given[name]
            elif spec.required:
                problems.append(f"{name}: required{_what(spec)}, and not given")
            else:
                values[name] = copy.deepcopy(spec.schema["default"])
        if problems:
            raise ParameterError(problems, agent=self.agent)
        return values

    def _unknown(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self.specs), n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        known = ", ".join(f"`{n}`" for n in self.specs) or "none"
        return f"{name}: not a parameter of this agent (its parameters: {known}){hint}"

    def from_text(self, pairs: Iterable[str]) -> dict[str, Any]:
        """`NAME=VALUE` pairs from the command line, each value read by its parameter's
        type (`max_labels=2` is the integer 2, `tags=["a","b"]` an array, a string
        stays as typed). Raises `ParameterError` for every malformed pair."""
        values: dict[str, Any] = {}
        problems: list[str] = []
        for pair in pairs:
            name, equals, text = pair.partition("=")
            if not equals or not name:
                problems.append(f"`{pair}`: write a parameter as NAME=VALUE")
                continue
            if name not in self.specs:
                problems.append(self._unknown(name))
                continue
            values[name] = read_text_value(self.specs[name].schema, text)
        if problems:
            raise ParameterError(problems, agent=self.agent)
        return values

    def input_schema(self, fixed: Iterable[str] = ()) -> dict[str, Any]:
        """The parameters as one object schema (the tool input of a sub-agent, what
        `assemble schema --io` prints); `fixed` are left out (set by a parent entry)."""
        skip = set(fixed)
        properties = {n: dict(s.schema) for n, s in self.specs.items() if n not in skip}
        required = [n for n, s in self.specs.items() if s.required and n not in skip]
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }


def read_text_value(schema: Mapping[str, Any], text: str) -> Any:
    """A command-line value read by its schema's type: a string parameter takes the
    text as it is; any other reads it as JSON (`2`, `true`, `["a"]`, `null`), and keeps
    the text when it is not JSON but the schema also allows a string. A value that
    fits neither stays text, so validation says what is wrong with it."""
    types = declared_types(schema)
    if types == {"string"}:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if (
        not types
        or _json_type(value) in types
        or ("number" in types and _json_type(value) == "integer")
    ):
        return value
    return text


def declared_types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a schema names (`type`, or those of its `enum`/`const` values)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    values = schema.get("enum") if isinstance(schema.get("enum"), list) else None
    if values is None and "const" in schema:
        values = [schema["const"]]
    return {_json_type(v) for v in values} if values else set()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _what(spec: ParameterSpec) -> str:
    kinds = sorted(declared_types(spec.schema) & set(_JSON_TYPES))
    parts = [" or ".join(kinds)] if kinds else []
    if spec.description:
        parts.append(spec.description)
    return f" ({': '.join(parts)})" if parts else ""
