"""Extension handlers as runner hooks, in load order, failing safe.

- `tool_call`: before execution. Returning `Block(reason)` (or a mapping with
  `block: true`) stops the call: it never runs. A handler that raises, times out or
  returns anything but None/Block blocks too (fail closed). The first block wins;
  later handlers are not asked, so whatever the order, a block is a block.
- `tool_result`: after execution. Returns None or a `ResultPatch` (or mapping) with
  some of content, details, is_error, usage; fields left out keep their values;
  patches chain in load order. This changes what the model sees, never whether the
  side effect happened. A failing handler raises `ExtensionError` naming the
  extension: an unprocessed result is never sent silently.
- `context`: a copy of the messages before each request (one copy for the chain, so
  the conversation itself never changes); each handler's output (a returned list, or
  the list it changed in place) is the next one's input. Failure raises
  `ExtensionError`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assembler.errors import ExtensionError
from assembler.extensions.api import (
    Block,
    Handler,
    ResultPatch,
    SessionEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEvent,
)
from assembler.extensions.loader import LoadedExtension
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from assembler.runner.hooks import ALLOW, CallDecision, ResultOutcome
from assembler.tools.base import ToolResult

_PATCH_FIELDS = ("content", "details", "is_error", "usage")
MESSAGE_TYPES = (UserMessage, ContextMessage, AssistantMessage, ToolResultMessage)


@dataclass(frozen=True)
class _Subscription:
    extension: str
    handler: Handler


class ExtensionHooks:
    """Implements `RunnerHooks` over the handlers of loaded extensions."""

    def __init__(
        self,
        extensions: Sequence[LoadedExtension],
        *,
        agent: str,
        workspace: Path,
        timeout: float = 10.0,
        tool_sources: Mapping[str, str] | None = None,
    ) -> None:
        self.agent = agent
        self.workspace = workspace
        self.timeout = timeout
        self.tool_sources = tool_sources or {}  # live: tools can join after the build
        self.subscriptions: dict[str, list[_Subscription]] = {}
        for extension in extensions:
            for event, handlers in extension.registrations.handlers.items():
                self.subscriptions.setdefault(event, []).extend(
                    _Subscription(extension.name, h) for h in handlers
                )

    async def _call(self, subscription: _Subscription, argument: Any) -> Any:
        result = subscription.handler(argument)
        if inspect.isawaitable(result):
            async with asyncio.timeout(self.timeout):
                result = await result
        return result

    async def _notify(self, event: str, argument: Any) -> None:
        for subscription in self.subscriptions.get(event, ()):
            try:
                await self._call(subscription, argument)
            except TimeoutError as e:
                raise ExtensionError(
                    f"extension `{subscription.extension}`: {event} handler timed out "
                    f"after {self.timeout:g} s"
                ) from e
            except Exception as e:
                raise ExtensionError(
                    f"extension `{subscription.extension}`: {event} handler failed: "
                    f"{type(e).__name__}: {e}"
                ) from e

    async def on_run_start(self, prompt: str) -> None:
        return None

    async def on_run_end(self, reason: str) -> None:
        return None

    async def session_start(self) -> None:
        await self._notify("session_start", SessionEvent(self.agent))

    async def session_end(self, reason: str = "") -> None:
        await self._notify("session_end", SessionEvent(self.agent, reason))

    async def on_turn_start(self, turn: int) -> None:
        await self._notify("turn_start", TurnEvent(turn))

    async def on_turn_end(self, turn: int, message: AssistantMessage) -> None:
        await self._notify("turn_end", TurnEvent(turn, message))

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        subscriptions = self.subscriptions.get("context")
        if not subscriptions:
            return messages
        current = list(messages)  # one copy protects the history; handlers chain on it
        for subscription in subscriptions:
            try:
                result = await self._call(subscription, current)
            except TimeoutError as e:
                raise ExtensionError(
                    f"extension `{subscription.extension}`: context handler timed out"
                ) from e
            except Exception as e:
                raise ExtensionError(
                    f"extension `{subscription.extension}`: context handler failed: "
                    f"{type(e).__name__}: {e}"
                ) from e
            if result is None:
                continue
            if not isinstance(result, list | tuple):
                raise ExtensionError(
                    f"extension `{subscription.extension}`: context handler returned "
                    f"{type(result).__name__}; expected a list of messages or None"
                )
            strays = [type(m).__name__ for m in result if not isinstance(m, MESSAGE_TYPES)]
            if strays:
                raise ExtensionError(
                    f"extension `{subscription.extension}`: context handler returned a list "
                    f"holding {', '.join(sorted(set(strays)))}; every item must be a message "
                    "(assembler.messages)"
                )
            current = list(result)
        return current

    async def before_tool_call(self, call: ToolCall) -> CallDecision:
        event = ToolCallEvent(call, self.tool_sources.get(call.name, ""), self.workspace)
        for subscription in self.subscriptions.get("tool_call", ()):
            name = subscription.extension
            try:
                result = await self._call(subscription, event)
            except TimeoutError:
                return CallDecision(
                    True,
                    f"tool_call handler timed out after {self.timeout:g} s (fail closed)",
                    name,
                )
            except Exception as e:
                return CallDecision(
                    True, f"tool_call handler failed: {type(e).__name__}: {e} (fail closed)", name
                )
            decision = _decision(result, name)
            if decision.blocked:
                return decision
        return ALLOW

    async def after_tool_result(self, call: ToolCall, result: ToolResult) -> ResultOutcome:
        rewritten: list[str] = []
        for subscription in self.subscriptions.get("tool_result", ()):
            name = subscription.extension
            try:
                patch = await self._call(subscription, ToolResultEvent(call, result))
            except TimeoutError as e:
                raise ExtensionError(f"extension `{name}`: tool_result handler timed out") from e
            except Exception as e:
                raise ExtensionError(
                    f"extension `{name}`: tool_result handler failed: {type(e).__name__}: {e}"
                ) from e
            if patch is None:
                continue
            patched = _apply_patch(result, patch, name)
            if patched != result:
                rewritten.append(name)
            result = patched
        return ResultOutcome(result, tuple(rewritten))


def _decision(result: Any, extension: str) -> CallDecision:
    if result is None or result is True:
        return ALLOW
    if isinstance(result, Block):
        return CallDecision(True, result.reason or "blocked", extension)
    if isinstance(result, Mapping) and set(result) <= {"block", "reason"}:
        if result.get("block"):
            return CallDecision(True, str(result.get("reason") or "blocked"), extension)
        return ALLOW
    return CallDecision(
        True,
        f"tool_call handler returned {type(result).__name__}; expected None or Block (fail closed)",
        extension,
    )


def _apply_patch(result: ToolResult, patch: Any, extension: str) -> ToolResult:
    if isinstance(patch, ResultPatch):
        fields = {f: getattr(patch, f) for f in _PATCH_FIELDS if getattr(patch, f) is not None}
    elif isinstance(patch, Mapping) and set(patch) <= set(_PATCH_FIELDS):
        fields = dict(patch)
    else:
        raise ExtensionError(
            f"extension `{extension}`: tool_result handler returned {type(patch).__name__}; "
            "expected None, ResultPatch or a mapping of content/details/is_error/usage"
        )
    content = fields.get("content", result.content)
    is_error = fields.get("is_error", result.is_error)
    details = fields.get("details", result.details)
    if not isinstance(content, str) or not isinstance(is_error, bool):
        raise ExtensionError(
            f"extension `{extension}`: tool_result patch has content {type(content).__name__} "
            f"and is_error {type(is_error).__name__}; expected str and bool"
        )
    if not isinstance(details, Mapping):
        raise ExtensionError(
            f"extension `{extension}`: tool_result patch `details` must be a mapping"
        )
    if "usage" in fields:
        details = {**details, "usage": fields["usage"]}
    return replace(result, content=content, is_error=is_error, details=dict(details))
