"""What the user is told about an MCP server, and how exceptions are put into words."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class MCPDiagnostic:
    """Something about an MCP server the user should know that does not stop the run.

    `message` is complete on its own (it names the server), ready for a diagnostic
    event or a log line.
    """

    server: str
    message: str
    severity: Severity = "warning"

    def __str__(self) -> str:
        return self.message


def exception_text(exc: BaseException) -> str:
    """`Type: message`, or only the type when the message is empty."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def root_cause(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def noise_text(exc: Exception) -> str:
    """What a server sent instead of JSON-RPC, short: the parser's error quotes it."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            value = errors()[0].get("input")
        except Exception:
            value = None
        if isinstance(value, str):
            return repr(value[:80] + ("..." if len(value) > 80 else ""))
    return exception_text(exc)[:200]
