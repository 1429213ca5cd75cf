"""What the runtime and the static view of a Python tool share.

Both describe the same function: its name, description and snippet come from
`texts` on the same cleaned docstring, its signature is checked by
`signature_problems`, and its arguments object is built by `arguments_schema`, so the
`render --dry-run` prompt equals the real one.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assembler.manifest.model import PythonToolSpec
from assembler.tools.python.docstrings import Docstring, parse_docstring
from assembler.tools.python.schema import Schema, record

PERMISSIVE_PARAMETERS: Mapping[str, Any] = {"type": "object"}
VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


@dataclass(frozen=True)
class Texts:
    name: str
    description: str
    snippet: str
    doc: Docstring


def texts(spec: PythonToolSpec, function_name: str, docstring: str | None) -> Texts:
    """Name, description and snippet: the manifest's words first, then the function's.

    Both paths call this with the same cleaned docstring (`inspect.cleandoc` of
    `__doc__` equals `ast.get_docstring(clean=True)`), so their prompts match.
    """
    doc = parse_docstring(docstring)
    description = spec.description or doc.description or f"Call {spec.function}"
    first = next((line.strip() for line in description.splitlines() if line.strip()), "")
    return Texts(spec.name or function_name, description, spec.snippet or first, doc)


@dataclass(frozen=True)
class Param:
    """One parameter of the signature, as both paths see it."""

    name: str
    kind: inspect._ParameterKind
    required: bool
    context: bool = False


def signature_problems(params: Sequence[Param], declared: Mapping[str, Any] | None) -> list[str]:
    """What keeps the signature from being called with named JSON arguments."""
    problems: list[str] = []
    takes_more = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            problems.append(
                f"`*{param.name}` is not supported: a tool is called with named arguments"
            )
        elif param.kind is inspect.Parameter.VAR_KEYWORD and declared is None:
            problems.append(
                f"`**{param.name}` is not supported: name each argument, or declare "
                "`parameters` in the manifest"
            )
    if declared is None:
        return problems
    properties = declared.get("properties")
    names = list(properties) if isinstance(properties, Mapping) else []
    known = {p.name for p in params if not p.context and p.kind not in VARIADIC}
    if not takes_more:
        problems.extend(
            f"declared parameter `{name}` is not an argument of the function"
            for name in names
            if name not in known
        )
    problems.extend(
        f"argument `{p.name}` has no default but is not among the declared parameters"
        for p in params
        if p.required and not p.context and p.name in known and p.name not in names
    )
    return problems


def arguments_schema(params: Sequence[Param], properties: Mapping[str, Schema]) -> Schema:
    """The closed object of the function's arguments: what the model fills in."""
    return record(properties, [p.name for p in params if p.required and p.name in properties])


def plain(value: Any) -> Any:
    """A copy made of plain dicts and lists, as `jsonschema` and JSON encoders expect."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
