"""Python functions named in the manifest (`tools.fees:quote_fee`), offered as tools.

The model sees a JSON schema derived from the function's type hints and docstring;
the function sees Python values (Enum members, tuples, dataclasses) converted back
from the JSON the model sent. Whatever the function does (raise, hang, return
something odd), the model gets a result it can act on and the run goes on.

`static_python_tool` answers the same questions from the source file alone, for
`assemble render --dry-run`, which must not run project code. The name, description
and snippet come from the same function (`_texts`) on the same docstring, so the
dry-run prompt equals the real one; where the source cannot tell a parameter's type,
the static answer says so in `problems` rather than guessing.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import enum
import importlib
import inspect
import json
import sys
import traceback
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as InvalidSchema

from assembler.errors import ToolError
from assembler.manifest.model import PythonToolSpec
from assembler.tools.base import Tool, ToolContext, ToolFunction, ToolResult
from assembler.tools.python_schema import (
    NO_DEFAULT,
    Converter,
    Docstring,
    RuntimeOnly,
    Schema,
    SchemaError,
    SourceTypes,
    described,
    hint_schema,
    parse_docstring,
    record,
    with_default,
)
from assembler.tools.truncate import truncate_output
from assembler.validation.pyref import check_source, find_module_source

TRACEBACK_FRAMES = 5
MAX_ERROR_MESSAGE = 300
MAX_ARGUMENT_ERRORS = 5
PERMISSIVE_PARAMETERS: Mapping[str, Any] = {"type": "object"}
_CONTEXT_NAMES = {"assembler.tools.base.ToolContext", "assembler.tools.ToolContext"}
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


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


@dataclass(frozen=True)
class _Texts:
    name: str
    description: str
    snippet: str
    doc: Docstring


def _texts(spec: PythonToolSpec, function_name: str, docstring: str | None) -> _Texts:
    """Name, description and snippet: the manifest's words first, then the function's.

    Both paths call this with the same cleaned docstring (`inspect.cleandoc` of
    `__doc__` equals `ast.get_docstring(clean=True)`), so their prompts match.
    """
    doc = parse_docstring(docstring)
    description = spec.description or doc.description or f"Call {spec.function}"
    first = next((line.strip() for line in description.splitlines() if line.strip()), "")
    return _Texts(spec.name or function_name, description, spec.snippet or first, doc)


@dataclass(frozen=True)
class _Param:
    """One parameter of the signature, as both paths see it."""

    name: str
    kind: inspect._ParameterKind
    required: bool
    context: bool = False


def _signature_problems(params: Sequence[_Param], declared: Mapping[str, Any] | None) -> list[str]:
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
    known = {p.name for p in params if not p.context and p.kind not in _VARIADIC}
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


# --- loading and running -------------------------------------------------------------


def load_python_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> Tool:
    """Import `spec.function` (looking in `roots` before `sys.path`) and wrap it.

    Raises `ToolError` naming the reference when the module or function cannot be
    loaded or the function cannot be described as a tool.
    """
    module_name, function_name = _split(spec.function)
    module = _import(module_name, roots, spec.function)
    func = _lookup(module, module_name, function_name, spec.function)
    return _build(func, spec, func.__name__ if func.__name__.isidentifier() else function_name)


def tool_from_function(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    snippet: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> Tool:
    """A tool from a function object (an extension's `register_tool`), described and
    run exactly as `load_python_tool` does for a manifest's `python:` entry."""
    if not (inspect.isfunction(function) or inspect.ismethod(function)):
        raise ToolError(
            f"cannot use {function!r} as a tool: it is a {type(function).__name__}, not a "
            "function defined with `def` or `async def`"
        )
    reference = f"{function.__module__}:{function.__qualname__}"
    _refuse_generators(function, reference)
    spec = PythonToolSpec(reference, name, description, snippet, parameters)
    tool = _build(function, spec, function.__name__)
    return dataclasses.replace(tool, source=source) if source else tool


def _build(func: Callable[..., Any], spec: PythonToolSpec, function_name: str) -> Tool:
    reference = spec.function
    doc = inspect.cleandoc(func.__doc__) if isinstance(func.__doc__, str) else None
    texts = _texts(spec, function_name, doc)
    slots, derived, problems = _runtime_parameters(func, spec, texts.doc)
    if problems:
        raise ToolError(f"cannot use `{reference}` as a tool: " + "; ".join(problems))
    parameters = _plain(spec.parameters) if spec.parameters is not None else derived
    try:
        Draft202012Validator.check_schema(parameters)
    except InvalidSchema as exc:
        raise ToolError(
            f"`{reference}`: the declared parameters are not a valid JSON schema: {exc.message}"
        ) from exc
    takes_more = any(slot.param.kind is inspect.Parameter.VAR_KEYWORD for slot in slots)
    return Tool(
        name=texts.name,
        description=texts.description,
        parameters=parameters,
        execute=_executor(
            func,
            reference=reference,
            name=texts.name,
            slots=slots,
            takes_more=takes_more,
            parameters=parameters,
        ),
        snippet=texts.snippet,
        source=f"python:{reference}",
    )


def _split(reference: str) -> tuple[str, str]:
    module, _, function = reference.partition(":")
    if not module or not function:
        raise ToolError(f"a Python tool is `package.module:function`, not `{reference}`")
    return module, function


def _import(module_name: str, roots: Sequence[Path], reference: str) -> ModuleType:
    """The module, imported with `roots` put before `sys.path` only while importing.

    A module already imported under that name is reused. Imports the module makes at
    import time see `roots`; imports deferred to call time see only `sys.path`.
    """
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    entries = list(dict.fromkeys(str(root) for root in roots))
    importlib.invalidate_caches()
    sys.path[:0] = entries
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name + ".").startswith(exc.name + "."):
            searched = ", ".join(entries) or "no project directory"
            raise ToolError(
                f"cannot load Python tool `{reference}`: module `{exc.name}` not found "
                f"(searched {searched} and installed packages)"
            ) from exc
        raise _import_failed(reference, module_name, exc) from exc
    except (Exception, SystemExit) as exc:
        raise _import_failed(reference, module_name, exc) from exc
    finally:
        for entry in entries:
            with suppress(ValueError):
                sys.path.remove(entry)


def _import_failed(reference: str, module_name: str, exc: BaseException) -> ToolError:
    return ToolError(
        f"cannot load Python tool `{reference}`: importing `{module_name}` failed: "
        f"{_exception_text(exc)}"
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
    _refuse_generators(found, reference)
    return found


def _refuse_generators(func: Callable[..., Any], reference: str) -> None:
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise ToolError(
            f"cannot use `{reference}` as a tool: it is a generator; a tool returns its result"
        )


@dataclass(frozen=True)
class _Slot:
    """How one parameter is filled: the ToolContext, or an argument converted back."""

    param: _Param
    convert: Converter | None
    default: Any


def _runtime_parameters(
    func: Callable[..., Any], spec: PythonToolSpec, doc: Docstring
) -> tuple[list[_Slot], Schema, list[str]]:
    reference = spec.function
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ToolError(
            f"cannot use `{reference}` as a tool: its signature cannot be read ({exc})"
        ) from exc
    hints = _resolve_hints(func, reference)
    slots: list[_Slot] = []
    properties: dict[str, Schema] = {}
    problems: list[str] = []
    for item in signature.parameters.values():
        hint = hints.get(item.name, Any)
        variadic = item.kind in _VARIADIC
        required = item.default is inspect.Parameter.empty and not variadic
        param = _Param(item.name, item.kind, required, context=_context_hint(hint))
        default = NO_DEFAULT if item.default is inspect.Parameter.empty else item.default
        if param.context or variadic:
            slots.append(_Slot(param, None, default))
            continue
        try:
            part = hint_schema(hint)
        except SchemaError as exc:
            if spec.parameters is None:
                problems.append(f"parameter `{item.name}`: {exc}")
            slots.append(_Slot(param, None, default))
            continue
        slots.append(_Slot(param, part.convert, default))
        properties[item.name] = with_default(
            described(part.schema, doc.params.get(item.name)), default
        )
    params = [slot.param for slot in slots]
    problems[:0] = _signature_problems(params, spec.parameters)
    return slots, _arguments_schema(params, properties), problems


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
                f"be resolved ({_exception_text(exc)})"
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


def _arguments_schema(params: Sequence[_Param], properties: Mapping[str, Schema]) -> Schema:
    return record(properties, [p.name for p in params if p.required and p.name in properties])


def _plain(value: Any) -> Any:
    """A copy made of plain dicts and lists, as `jsonschema` and JSON encoders expect."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


class _TimedOut(Exception):
    pass


def _executor(
    func: Callable[..., Any],
    *,
    reference: str,
    name: str,
    slots: Sequence[_Slot],
    takes_more: bool,
    parameters: Mapping[str, Any],
) -> ToolFunction:
    validator = Draft202012Validator(parameters)
    is_async = inspect.iscoroutinefunction(func)

    async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if not isinstance(args, Mapping):
            return _finish(ToolResult(f"{name}: arguments must be a JSON object", True), ctx)
        complaint = _argument_errors(validator, args, name, parameters)
        if complaint:
            return _finish(ToolResult(complaint, is_error=True), ctx, reference)
        try:
            positional, keywords = _bind(slots, args, ctx, takes_more)
            value = await _run(func, is_async, positional, keywords, ctx.timeout)
        except _TimedOut:
            note = "" if is_async else " (it runs in a thread that cannot be stopped)"
            return _finish(
                ToolResult(
                    f"{name} did not finish within {ctx.timeout:g} s{note}",
                    is_error=True,
                    details={"timed_out": True},
                ),
                ctx,
                reference,
            )
        except (Exception, SystemExit) as exc:
            return _finish(_failure(exc), ctx, reference)
        return _finish(_to_result(value), ctx, reference)

    return execute


def _bind(
    slots: Sequence[_Slot], args: Mapping[str, Any], ctx: ToolContext, takes_more: bool
) -> tuple[list[Any], dict[str, Any]]:
    """Positional-only parameters by position, the rest by name; defaults left to
    Python except where a later positional argument needs the gap filled."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    names = set()
    for slot in slots:
        param = slot.param
        names.add(param.name)
        if param.kind in _VARIADIC:
            continue
        if param.context:
            value: Any = ctx
        elif param.name in args:
            raw = args[param.name]
            value = raw if slot.convert is None else slot.convert(raw)
        elif param.kind is inspect.Parameter.POSITIONAL_ONLY and slot.default is not NO_DEFAULT:
            value = slot.default
        elif param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ToolError(f"missing required argument `{param.name}`")
        else:
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            positional.append(value)
        else:
            keywords[param.name] = value
    if takes_more:
        keywords.update({key: value for key, value in args.items() if key not in names})
    return positional, keywords


async def _run(
    func: Callable[..., Any],
    is_async: bool,
    positional: list[Any],
    keywords: dict[str, Any],
    timeout: float,
) -> Any:
    """Call the function within `timeout`: sync code in a worker thread so the event
    loop keeps serving other work; async code awaited (and cancelled on timeout).

    `SystemExit` is carried out of the task as a value: a task that raises it would
    stop the whole event loop, and a tool calling `sys.exit` must not end the run.
    """

    async def call() -> Any:
        try:
            if is_async:
                return await func(*positional, **keywords)
            result = await asyncio.to_thread(func, *positional, **keywords)
            if inspect.isawaitable(result):  # a sync wrapper around a coroutine function
                result = await result
            return result
        except SystemExit as exc:
            return _Exited(exc)

    task = asyncio.ensure_future(call())
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        raise _TimedOut
    result = task.result()
    if isinstance(result, _Exited):
        raise result.exc
    return result


@dataclass(frozen=True)
class _Exited:
    exc: SystemExit


def _argument_errors(
    validator: Any, args: Mapping[str, Any], name: str, parameters: Mapping[str, Any]
) -> str | None:
    """A message naming each wrong argument, or None when the arguments are valid."""
    errors = list(validator.iter_errors(dict(args)))
    if not errors:
        return None
    properties = parameters.get("properties")
    allowed = list(properties) if isinstance(properties, Mapping) else []
    missing: list[str] = []
    unknown: list[str] = []
    other: list[str] = []
    for error in errors:
        path = list(error.absolute_path)
        if not path and error.validator == "required":
            missing.extend(
                key for key in error.validator_value if key not in args and key not in missing
            )
        elif not path and error.validator == "additionalProperties" and allowed:
            unknown.extend(key for key in args if key not in allowed and key not in unknown)
        else:
            text = f"{_argument_path(path)}: {_shorten(error.message)}"
            if text not in other:
                other.append(text)
    parts: list[str] = []
    if missing:
        parts.append("missing required argument(s) " + ", ".join(f"`{k}`" for k in missing))
    if unknown:
        parts.append(
            "unknown argument(s) "
            + ", ".join(f"`{k}`" for k in unknown)
            + " (allowed: "
            + ", ".join(allowed)
            + ")"
        )
    parts.extend(other[:MAX_ARGUMENT_ERRORS])
    return f"{name}: invalid arguments: " + "; ".join(parts)


def _argument_path(path: Sequence[Any]) -> str:
    if not path:
        return "arguments"
    text = str(path[0])
    for part in path[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return f"argument `{text}`"


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_ERROR_MESSAGE else text[: MAX_ERROR_MESSAGE - 3] + "..."


def _exception_text(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _failure(exc: BaseException) -> ToolResult:
    """The error result for a function that raised: `ToolError` messages are meant for
    the model as they are; anything else is shown with its type."""
    content = str(exc) if isinstance(exc, ToolError) else _exception_text(exc)
    frames = "".join(traceback.format_exception(exc, limit=-TRACEBACK_FRAMES))
    return ToolResult(
        content, is_error=True, details={"exception": type(exc).__name__, "traceback": frames}
    )


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult("(no output)")
    if isinstance(value, str):
        return ToolResult(str(value))
    try:
        return ToolResult(json.dumps(value, ensure_ascii=False, indent=2, default=_json_default))
    except (TypeError, ValueError, RecursionError):
        return ToolResult(str(value))


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _finish(result: ToolResult, ctx: ToolContext, reference: str = "") -> ToolResult:
    """Cut the content to the context's limits, saying so, and name the function."""
    body, notice = truncate_output(
        result.content, ctx.max_output_lines, ctx.max_output_bytes, keep="head"
    )
    details = {**({"function": reference} if reference else {}), **result.details}
    if notice is None:
        return ToolResult(result.content, result.is_error, details)
    details["truncated"] = True
    return ToolResult(body.rstrip("\n") + "\n" + notice, result.is_error, details)


# --- the static view -----------------------------------------------------------------


def static_python_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> StaticToolInfo:
    """What `load_python_tool` would produce, read from source without importing it."""
    reference = spec.function
    module_name, _, function_name = reference.partition(":")
    node, problem = _find_definition(reference, module_name, function_name, roots)
    if node is None:
        texts = _texts(spec, function_name, None)
        declared = _plain(spec.parameters) if spec.parameters is not None else None
        return StaticToolInfo(
            texts.name,
            texts.snippet,
            texts.description,
            declared or dict(PERMISSIVE_PARAMETERS),
            (problem,),
        )
    tree, definition = node
    texts = _texts(spec, definition.name, ast.get_docstring(definition, clean=True))
    names = SourceTypes(tree)
    params, properties, problems = _static_parameters(definition, names, texts.doc)
    problems[:0] = _signature_problems(params, spec.parameters)
    if definition.decorator_list:
        problems.insert(
            0,
            f"`{reference}` is decorated: what the decorator changes is only known at run time",
        )
    if spec.parameters is not None:
        parameters: Mapping[str, Any] = _plain(spec.parameters)
        problems = [p for p in problems if not p.startswith("parameter `")]
    else:
        parameters = _arguments_schema(params, properties)
    return StaticToolInfo(texts.name, texts.snippet, texts.description, parameters, tuple(problems))


_Definition = tuple[ast.Module, ast.FunctionDef | ast.AsyncFunctionDef]


def _find_definition(
    reference: str, module_name: str, function_name: str, roots: Sequence[Path]
) -> tuple[_Definition | None, str]:
    """The parsed module and the function's `def`, or None and why not."""
    if not module_name or not function_name:
        return None, f"a Python tool is `package.module:function`, not `{reference}`"
    path, problem = find_module_source(module_name, roots)
    if path is None:
        return None, problem or (
            f"`{module_name}` is compiled; `{function_name}` is only known at run time"
        )
    found = check_source(path, function_name, module_name)
    if found.problem or found.uncertain:
        return None, found.problem or found.uncertain
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for statement in tree.body:
        if (
            isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            and statement.name == function_name
        ):
            return (tree, statement), ""
    return None, f"`{module_name}` has no top-level function `{function_name}`"


def _static_parameters(
    node: ast.FunctionDef | ast.AsyncFunctionDef, names: SourceTypes, doc: Docstring
) -> tuple[list[_Param], dict[str, Schema], list[str]]:
    args = node.args
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

    params: list[_Param] = []
    properties: dict[str, Schema] = {}
    problems: list[str] = []
    for arg, default_node, kind in entries:
        name = arg.arg
        variadic = kind in _VARIADIC
        param = _Param(
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


def _is_context(names: SourceTypes, annotation: ast.expr | None) -> bool:
    """The static twin of `_context_hint`."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value.strip(), mode="eval").body
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
