"""Checking the arguments a model sends, and turning refusals into error results.

Models send wrong types, forget required fields and invent extra ones. None of that
is a bug in the agent, so it must come back to the model as an error result it can
correct, never as an exception that ends the run. Tool bodies raise `ToolError`;
`guarded` converts it (and `OSError`, which is how the filesystem says no) into a
`ToolResult(is_error=True)`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from assembler.errors import ToolError
from assembler.text import json_type_name
from assembler.tools.base import ToolContext, ToolFunction, ToolResult

Body = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]


def guarded(tool_name: str, allowed: Iterable[str]) -> Callable[[Body], ToolFunction]:
    """Wrap a tool body: reject unknown arguments, convert refusals to error results."""
    known = tuple(allowed)

    def decorate(body: Body) -> ToolFunction:
        @functools.wraps(body)
        async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            try:
                if not isinstance(args, Mapping):
                    raise ToolError(f"{tool_name}: arguments must be a JSON object")
                extra = sorted(str(name) for name in args if name not in known)
                if extra:
                    raise ToolError(
                        f"{tool_name}: unknown argument(s) {', '.join(extra)}; "
                        f"allowed: {', '.join(known)}"
                    )
                return await body(args, ctx)
            except ToolError as exc:
                return ToolResult(str(exc), is_error=True)
            except OSError as exc:
                where = f" ({exc.filename})" if exc.filename else ""
                return ToolResult(
                    f"{tool_name}: {exc.strerror or exc}{where}",
                    is_error=True,
                )

        return execute

    return decorate


def require_str(args: Mapping[str, Any], name: str, *, allow_empty: bool = True) -> str:
    """A required string argument."""
    value = optional_str(args, name)
    if value is None:
        raise ToolError(f"missing required argument {name!r} (a string)")
    if not allow_empty and not value:
        raise ToolError(f"argument {name!r} must not be empty")
    return value


def optional_str(args: Mapping[str, Any], name: str) -> str | None:
    """A string argument that may be absent (or null)."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"argument {name!r} must be a string, not {json_type_name(value)}")
    return value


def optional_int(args: Mapping[str, Any], name: str, *, minimum: int = 1) -> int | None:
    """An integer argument; `10.0` is accepted as JSON Schema allows, `"10"` is not."""
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"argument {name!r} must be an integer, not {json_type_name(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ToolError(f"argument {name!r} must be a whole number, not {value}")
        value = int(value)
    if value < minimum:
        raise ToolError(f"argument {name!r} must be at least {minimum}, not {value}")
    return value


def optional_number(args: Mapping[str, Any], name: str) -> float | None:
    """A positive, finite number argument (seconds, for instance)."""
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"argument {name!r} must be a number, not {json_type_name(value)}")
    if not math.isfinite(value) or value <= 0:
        raise ToolError(f"argument {name!r} must be a positive number, not {value}")
    return float(value)


def optional_bool(args: Mapping[str, Any], name: str, *, default: bool = False) -> bool:
    """A boolean argument; only JSON `true`/`false` count."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolError(f"argument {name!r} must be true or false, not {json_type_name(value)}")
    return value
