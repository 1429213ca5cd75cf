"""What the handler calls are made of: one subscription (an extension's handler for an
event), how an event's handlers are chained, and what a failed or late one reports.

Apart from `calls.HandlerCaller`, which runs them, so that the dispatcher's module is
about dispatching.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Protocol

from assembler.extensions.api import Handler


def is_coroutine_handler(handler: Handler) -> bool:
    """A coroutine function (or an object with an async `__call__`) runs on the event
    loop; anything else runs in the worker thread."""
    call = getattr(handler, "__call__", None)  # noqa: B004 (an object with async __call__)
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


@dataclass(frozen=True)
class Subscription:
    """One handler of one extension; `is_coroutine` is decided once, here."""

    extension: str
    handler: Handler
    is_coroutine: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_coroutine", is_coroutine_handler(self.handler))


class Chain(Protocol):
    """How one event's handlers are chained: what each receives, and how its result
    is folded in. `accept` is given every result but None (a handler with nothing to
    say changes nothing, so a chain must treat None as no change), and returns True
    to stop asking the later handlers; it may raise `ExtensionError` for a result of
    the wrong shape. `argument` changes only through `accept`."""

    def argument(self) -> Any: ...
    def accept(self, extension: str, result: Any) -> bool: ...


@dataclass(frozen=True)
class HandlerFailure:
    """The handler of `extension` raised `error`, or (error None) did not finish in
    time. `event` is set when the failure is an earlier notification's."""

    extension: str
    error: BaseException | None = None
    event: str = ""

    def describe(self, event: str, timeout: float) -> str:
        event = self.event or event
        if self.error is None:
            return f"{event} handler timed out after {timeout:g} s"
        return f"{event} handler failed: {type(self.error).__name__}: {self.error}"


class Notification:
    """Every handler gets the same event; what it returns is ignored."""

    def __init__(self, event: Any) -> None:
        self.event = event

    def argument(self) -> Any:
        return self.event

    def accept(self, extension: str, result: Any) -> bool:
        return False
