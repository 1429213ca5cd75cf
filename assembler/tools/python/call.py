"""Calling a Python tool: arguments in, a `ToolResult` out, whatever the function does.

The model's JSON arguments are checked against the schema, converted back to the
Python types the function declared, and the function is called within the context's
timeout. A function that raises, calls `sys.exit`, hangs or returns something odd
still gives the model a result it can act on, and the run goes on.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import enum
import inspect
import json
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from assembler.errors import ToolError
from assembler.tools.base import ToolContext, ToolFunction, ToolResult
from assembler.tools.python.schema import NO_DEFAULT, Converter
from assembler.tools.python.signature import VARIADIC, Param
from assembler.tools.truncate import truncate_output

TRACEBACK_FRAMES = 5
MAX_ERROR_MESSAGE = 300
MAX_ARGUMENT_ERRORS = 5


@dataclass(frozen=True)
class Slot:
    """How one parameter is filled: the ToolContext, or an argument converted back."""

    param: Param
    convert: Converter | None
    default: Any


def executor(
    func: Callable[..., Any],
    *,
    reference: str,
    name: str,
    slots: Sequence[Slot],
    takes_more: bool,
    parameters: Mapping[str, Any],
) -> ToolFunction:
    """The tool's `execute`: validate, bind, call, and turn the outcome into a result."""
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
            value = await _run(func, is_async, positional, keywords, timeout=ctx.timeout, name=name)
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
    slots: Sequence[Slot], args: Mapping[str, Any], ctx: ToolContext, takes_more: bool
) -> tuple[list[Any], dict[str, Any]]:
    """Positional-only parameters by position, the rest by name; defaults left to
    Python except where a later positional argument needs the gap filled."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    names = set()
    for slot in slots:
        param = slot.param
        names.add(param.name)
        if param.kind in VARIADIC:
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


class _TimedOut(Exception):
    pass


@dataclass(frozen=True)
class _Exited:
    exc: SystemExit


async def _run(
    func: Callable[..., Any],
    is_async: bool,
    positional: list[Any],
    keywords: dict[str, Any],
    *,
    timeout: float,
    name: str,
) -> Any:
    """Call the function within `timeout`: sync code in a thread of its own so the
    event loop keeps serving other work; async code awaited (and cancelled on timeout).

    `SystemExit` is carried out of the task as a value: a task that raises it would
    stop the whole event loop, and a tool calling `sys.exit` must not end the run.
    """

    async def call() -> Any:
        try:
            if is_async:
                return await func(*positional, **keywords)
            result = await _in_daemon_thread(func, positional, keywords, name)
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


async def _in_daemon_thread(
    func: Callable[..., Any], positional: list[Any], keywords: dict[str, Any], name: str
) -> Any:
    """`asyncio.to_thread`, but on a daemon thread started for this call.

    `to_thread` uses the loop's default executor, whose threads `asyncio.run` joins
    when it shuts down: a sync tool that timed out would keep the process alive until
    it returned, forever if it never does. Nothing waits for a daemon thread; when the
    call has timed out (or the loop is gone), its late result is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled: the call timed out, nobody wants the result
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(func, *positional, **keywords)
        except BaseException as exc:
            error = exc
        with suppress(RuntimeError):  # the loop is closed: the run is over
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"python tool {name}", daemon=True).start()
    return await future


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


def exception_text(exc: BaseException) -> str:
    """`Type: message`, or just the type when the message is empty."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _failure(exc: BaseException) -> ToolResult:
    """The error result for a function that raised: `ToolError` messages are meant for
    the model as they are; anything else is shown with its type."""
    content = str(exc) if isinstance(exc, ToolError) else exception_text(exc)
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
