"""A Python tool as `assemble render --dry-run` sees it: read from source, never imported.

The name, description and snippet come from the same function (`texts`) on the same
docstring as the real tool's, so the dry-run prompt equals the real one; the
parameters' schemas come from `SourceTypes`, which builds them with the constructors
`hint_schema` uses. Where the source cannot tell a parameter's type, the answer says
so in `problems` rather than guessing.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.manifest.model import PythonToolSpec
from assembler.python_refs import (
    ParsedModule,
    check_source,
    find_module_source,
    parse_expression,
)
from assembler.tools.python.docstrings import Docstring
from assembler.tools.python.schema import (
    NO_DEFAULT,
    RuntimeOnly,
    Schema,
    SchemaError,
    described,
    with_default,
)
from assembler.tools.python.signature import (
    PERMISSIVE_PARAMETERS,
    VARIADIC,
    Param,
    arguments_schema,
    plain,
    signature_problems,
    texts,
)
from assembler.tools.python.source_types import SourceTypes

_CONTEXT_NAMES = {"assembler.tools.base.ToolContext", "assembler.tools.ToolContext"}

_Definition = tuple[ParsedModule, ast.FunctionDef | ast.AsyncFunctionDef]


@dataclass(frozen=True)
class StaticToolInfo:
    """What the dry run can say about a Python tool without importing it.

    `problems` lists what only running the code would settle (a type defined in the
    project, a missing module); when it is empty, `parameters` equals the real tool's.
    """

    name: str
    snippet: str
    description: str
    parameters: Mapping[str, Any]
    problems: tuple[str, ...] = ()


def static_python_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> StaticToolInfo:
    """What `load_python_tool` would produce, read from source without importing it."""
    reference = spec.function
    module_name, _, function_name = reference.partition(":")
    found, problem = _find_definition(reference, module_name, function_name, roots)
    if found is None:
        unknown = texts(spec, function_name, None)
        declared = plain(spec.parameters) if spec.parameters is not None else None
        return StaticToolInfo(
            unknown.name,
            unknown.snippet,
            unknown.description,
            declared or dict(PERMISSIVE_PARAMETERS),
            (problem,),
        )
    module, definition = found
    known = texts(spec, definition.name, ast.get_docstring(definition, clean=True))
    params, properties, problems = _parameters(definition, SourceTypes.of(module), known.doc)
    problems[:0] = signature_problems(params, spec.parameters)
    if definition.decorator_list:
        problems.insert(
            0,
            f"`{reference}` is decorated: what the decorator changes is only known at run time",
        )
    if spec.parameters is not None:
        parameters: Mapping[str, Any] = plain(spec.parameters)
        problems = [p for p in problems if not p.startswith("parameter `")]
    else:
        parameters = arguments_schema(params, properties)
    return StaticToolInfo(known.name, known.snippet, known.description, parameters, tuple(problems))


def _find_definition(
    reference: str, module_name: str, function_name: str, roots: Sequence[Path]
) -> tuple[_Definition | None, str]:
    """The parsed module and the function's `def`, or None and why not.

    Whether the reference names a `def` is `check_source`'s verdict, the one
    `assemble validate` gives, read from the same parse (each file is parsed once).
    """
    if not module_name or not function_name:
        return None, f"a Python tool is `package.module:function`, not `{reference}`"
    path, problem = find_module_source(module_name, roots)
    if path is None:
        return None, problem or (
            f"`{module_name}` is compiled; `{function_name}` is only known at run time"
        )
    found = check_source(path, function_name, module_name)
    if found.module is None or found.definition is None:
        return None, found.problem or found.uncertain
    return (found.module, found.definition), ""


def _parameters(
    node: ast.FunctionDef | ast.AsyncFunctionDef, names: SourceTypes, doc: Docstring
) -> tuple[list[Param], dict[str, Schema], list[str]]:
    params: list[Param] = []
    properties: dict[str, Schema] = {}
    problems: list[str] = []
    for arg, default_node, kind in _arguments(node.args):
        name = arg.arg
        variadic = kind in VARIADIC
        param = Param(
            name,
            kind,
            default_node is None and not variadic,
            context=_is_context(names, arg.annotation),
        )
        params.append(param)
        if param.context or variadic:
            continue
        try:
            schema = names.annotation(arg.annotation)
        except RuntimeOnly as exc:
            problems.append(f"parameter `{name}`: type `{exc}` is only known at run time")
            schema = {}
        except SchemaError as exc:
            problems.append(f"parameter `{name}`: {exc}")
            schema = {}
        default: Any = NO_DEFAULT
        if default_node is not None:
            try:
                default = names.default(default_node)
            except RuntimeOnly as exc:
                problems.append(f"parameter `{name}`: default `{exc}` is only known at run time")
        properties[name] = with_default(described(schema, doc.params.get(name)), default)
    return params, properties, problems


def _arguments(
    args: ast.arguments,
) -> list[tuple[ast.arg, ast.expr | None, inspect._ParameterKind]]:
    """Each parameter with its default expression and kind, in signature order."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults.extend(args.defaults)
    kinds: list[inspect._ParameterKind] = [inspect.Parameter.POSITIONAL_ONLY] * len(
        args.posonlyargs
    )
    kinds += [inspect.Parameter.POSITIONAL_OR_KEYWORD] * len(args.args)
    entries: list[tuple[ast.arg, ast.expr | None, inspect._ParameterKind]] = list(
        zip(positional, defaults, kinds, strict=True)
    )
    if args.vararg:
        entries.append((args.vararg, None, inspect.Parameter.VAR_POSITIONAL))
    entries.extend(
        (arg, default, inspect.Parameter.KEYWORD_ONLY)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    )
    if args.kwarg:
        entries.append((args.kwarg, None, inspect.Parameter.VAR_KEYWORD))
    return entries


def _is_context(names: SourceTypes, annotation: ast.expr | None) -> bool:
    """The static twin of `python_runtime._context_hint`."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = parse_expression(annotation.value.strip())
        except SyntaxError:
            return False
    members = _union_members(names, annotation)
    if len(members) == 2 and any(_is_none(m) for m in members):
        members = [m for m in members if not _is_none(m)]
    return len(members) == 1 and names.qualify(members[0]) in _CONTEXT_NAMES


def _union_members(names: SourceTypes, node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(names, node.left), *_union_members(names, node.right)]
    if isinstance(node, ast.Subscript):
        wrapper = names.qualify(node.value)
        inner = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if wrapper == "typing.Optional":
            return [*inner, ast.Constant(None)]
        if wrapper == "typing.Union":
            return [m for item in inner for m in _union_members(names, item)]
    return [node]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
