"""Loading a Python tool: import the function, read its signature, wrap it.

The model sees a JSON schema derived from the function's type hints and docstring;
the function sees Python values (Enum members, tuples, dataclasses) converted back
from the JSON the model sent (`python_call`).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as InvalidSchema

from assembler.errors import ToolError
from assembler.manifest.model import PythonToolSpec
from assembler.python_refs import import_module
from assembler.tools.base import Tool, ToolContext
from assembler.tools.python.call import Slot, exception_text, executor
from assembler.tools.python.docstrings import Docstring
from assembler.tools.python.schema import (
    NO_DEFAULT,
    Schema,
    SchemaError,
    described,
    hint_schema,
    with_default,
)
from assembler.tools.python.signature import (
    VARIADIC,
    Param,
    arguments_schema,
    plain,
    signature_problems,
    texts,
)


def import_function(reference: str, roots: Sequence[Path]) -> tuple[FunctionType, str]:
    """The function `package.module:function` names, and the name it is offered under
    by default (its `__name__`, or the reference's when that is not an identifier)."""
    module_name, function_name = _split(reference)
    module = _import(module_name, roots, reference)
    func = _lookup(module, module_name, function_name, reference)
    return func, func.__name__ if func.__name__.isidentifier() else function_name


def build(func: Callable[..., Any], spec: PythonToolSpec, function_name: str) -> Tool:
    """The tool for `func`: its schema, prompt texts and `execute`."""
    reference = spec.function
    doc = inspect.cleandoc(func.__doc__) if isinstance(func.__doc__, str) else None
    described_texts = texts(spec, function_name, doc)
    slots, derived, problems = _parameters(func, spec, described_texts.doc)
    if problems:
        raise ToolError(f"cannot use `{reference}` as a tool: " + "; ".join(problems))
    parameters = plain(spec.parameters) if spec.parameters is not None else derived
    try:
        Draft202012Validator.check_schema(parameters)
    except InvalidSchema as exc:
        raise ToolError(
            f"`{reference}`: the declared parameters are not a valid JSON schema: {exc.message}"
        ) from exc
    takes_more = any(slot.param.kind is inspect.Parameter.VAR_KEYWORD for slot in slots)
    return Tool(
        name=described_texts.name,
        description=described_texts.description,
        parameters=parameters,
        execute=executor(
            func,
            reference=reference,
            name=described_texts.name,
            slots=slots,
            takes_more=takes_more,
            parameters=parameters,
        ),
        snippet=described_texts.snippet,
        source=f"python:{reference}",
    )


def refuse_generators(func: Callable[..., Any], reference: str) -> None:
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise ToolError(
            f"cannot use `{reference}` as a tool: it is a generator; a tool returns its result"
        )


def _split(reference: str) -> tuple[str, str]:
    module, _, function = reference.partition(":")
    if not module or not function:
        raise ToolError(f"a Python tool is `package.module:function`, not `{reference}`")
    return module, function


def _import(module_name: str, roots: Sequence[Path], reference: str) -> ModuleType:
    """The module, looked up in `roots` before `sys.path` (as validation does), with
    failures worded for the tool that needed it."""
    try:
        return import_module(module_name, roots)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name + ".").startswith(exc.name + "."):
            searched = ", ".join(dict.fromkeys(str(r) for r in roots)) or "no project directory"
            raise ToolError(
                f"cannot load Python tool `{reference}`: module `{exc.name}` not found "
                f"(searched {searched} and installed packages)"
            ) from exc
        raise _import_failed(reference, module_name, exc) from exc
    except (Exception, SystemExit) as exc:
        raise _import_failed(reference, module_name, exc) from exc


def _import_failed(reference: str, module_name: str, exc: BaseException) -> ToolError:
    return ToolError(
        f"cannot load Python tool `{reference}`: importing `{module_name}` failed: "
        f"{exception_text(exc)}"
    )


def _lookup(module: ModuleType, module_name: str, name: str, reference: str) -> FunctionType:
    try:
        found = getattr(module, name)
    except AttributeError:
        raise ToolError(
            f"cannot load Python tool `{reference}`: `{module_name}` has no top-level "
            f"function `{name}`"
        ) from None
    if inspect.isclass(found):
        raise ToolError(f"cannot load Python tool `{reference}`: it is a class, not a function")
    if not isinstance(found, FunctionType):
        raise ToolError(
            f"cannot load Python tool `{reference}`: it is a {type(found).__name__}, "
            "not a function defined with `def` or `async def`"
        )
    refuse_generators(found, reference)
    return found


def _parameters(
    func: Callable[..., Any], spec: PythonToolSpec, doc: Docstring
) -> tuple[list[Slot], Schema, list[str]]:
    reference = spec.function
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ToolError(
            f"cannot use `{reference}` as a tool: its signature cannot be read ({exc})"
        ) from exc
    hints = _resolve_hints(func, reference)
    slots: list[Slot] = []
    properties: dict[str, Schema] = {}
    problems: list[str] = []
    for item in signature.parameters.values():
        hint = hints.get(item.name, Any)
        variadic = item.kind in VARIADIC
        required = item.default is inspect.Parameter.empty and not variadic
        param = Param(item.name, item.kind, required, context=_context_hint(hint))
        default = NO_DEFAULT if item.default is inspect.Parameter.empty else item.default
        if param.context or variadic:
            slots.append(Slot(param, None, default))
            continue
        try:
            part = hint_schema(hint)
        except SchemaError as exc:
            if spec.parameters is None:
                problems.append(f"parameter `{item.name}`: {exc}")
            slots.append(Slot(param, None, default))
            continue
        slots.append(Slot(param, part.convert, default))
        properties[item.name] = with_default(
            described(part.schema, doc.params.get(item.name)), default
        )
    params = [slot.param for slot in slots]
    problems[:0] = signature_problems(params, spec.parameters)
    return slots, arguments_schema(params, properties), problems


def _resolve_hints(func: Callable[..., Any], reference: str) -> dict[str, Any]:
    """The parameters' type hints, evaluated in the function's module.

    When some hint cannot be evaluated (often the return type, imported only under
    `TYPE_CHECKING`), each parameter's is tried alone: only those matter here.
    """
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:
        pass
    target = inspect.unwrap(func)
    module_globals: dict[str, Any] = getattr(target, "__globals__", {})
    annotations: dict[str, Any] = dict(getattr(target, "__annotations__", {}))
    annotations.pop("return", None)
    hints: dict[str, Any] = {}
    for name, annotation in annotations.items():
        probe = types.FunctionType((lambda: None).__code__, module_globals)
        probe.__annotations__ = {name: annotation}
        try:
            hints.update(typing.get_type_hints(probe, include_extras=True))
        except Exception as exc:
            raise ToolError(
                f"cannot use `{reference}` as a tool: the type of parameter `{name}` cannot "
                f"be resolved ({exception_text(exc)})"
            ) from exc
    return hints


def _context_hint(hint: Any) -> bool:
    """`ToolContext`, or `ToolContext | None` (so the function can run without one)."""
    if hint is ToolContext:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = set(typing.get_args(hint))
        return members == {ToolContext, type(None)}
    return False
