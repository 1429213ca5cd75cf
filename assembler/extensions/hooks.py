"""Extension handlers as runner hooks, in load order, failing safe.

- `tool_call`: before execution. The handler gets a read-only view of the call (all
  the way down) and answers `None` to allow, or `Block(reason)` (or the mapping
  `{"block": True, "reason": ...}`) to block: the call then never runs. A handler
  that raises, is late, or answers anything else (`True`, `{}`, `{"reason": ...}`)
  blocks too, with a reason naming the extension and what it returned (fail
  closed). The first block wins; later handlers are not asked, so whatever the
  order, a block is a block. No handler can rewrite a call's arguments.
- `tool_result`: after execution. Returns None or a `ResultPatch` (or mapping) with
  some of content, details, is_error, usage; fields left out keep their values;
  patches chain in load order. This changes what the model sees, never whether the
  side effect happened. A failing or late handler raises `ExtensionError` naming the
  extension: an unprocessed result is never sent silently.
- `context`: a copy of the messages before each request (one copy for the chain, so
  the conversation itself never changes); each handler's output (a returned list, or
  the list it changed in place) is the next one's input. Failure raises
  `ExtensionError`. A chain that changed nothing hands the runner's own list back,
  and its copy is brought up to date for the next request instead of made again
  (`extensions.context_copy`): the cost per request does not grow with the history.

Every handler has `limits.hook_timeout` seconds, and a late one is abandoned
whatever it does with cancellation (`assembler.extensions.calls`). Notifications
(`turn_start`, `turn_end`, `session_start`) with only plain handlers are not waited
for; their failure is raised by the next hook, before any request or tool call that
follows, and at the end of the run. An event no extension handles costs a dictionary
look-up: it never reaches the handler thread.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from assembler.errors import ExtensionError, Issue
from assembler.extensions.api import (
    Block,
    ResultPatch,
    SessionEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEvent,
    read_only_call,
)
from assembler.extensions.calls import HandlerCaller
from assembler.extensions.context_copy import ContextCopies, ContextCopy
from assembler.extensions.loader import LoadedExtension
from assembler.extensions.subscriptions import HandlerFailure, Notification, Subscription
from assembler.frozen import thaw
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from assembler.runner.hooks import ALLOW, CallDecision, ResultOutcome, current_permission
from assembler.tools.base import ToolResult

_PATCH_FIELDS = ("content", "details", "is_error", "usage")
MESSAGE_TYPES = (UserMessage, ContextMessage, AssistantMessage, ToolResultMessage)
_shown = reprlib.Repr()
_shown.maxstring = _shown.maxother = 80


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
        self.caller = HandlerCaller(timeout)
        self.subscriptions: dict[str, list[Subscription]] = {}
        for extension in extensions:
            for event, handlers in extension.registrations.handlers.items():
                self.subscriptions.setdefault(event, []).extend(
                    Subscription(extension.name, h) for h in handlers
                )
        self._copies = ContextCopies()
        self._viewed: tuple[ToolCall, ToolCall] | None = None  # a call, its read-only view

    def take_diagnostics(self) -> list[Issue]:
        """Handlers abandoned since the last call, each reported once."""
        return [Issue(severity="warning", message=m) for m in self.caller.take_diagnostics()]

    def _fail(self, event: str, failure: HandlerFailure) -> ExtensionError:
        error = ExtensionError(
            f"extension `{failure.extension}`: {failure.describe(event, self.timeout)}"
        )
        error.__cause__ = failure.error
        return error

    async def _notify(self, event: str, argument: Any) -> None:
        """Tell the handlers of `event`; plain ones are not waited for (a failure is
        raised by the next hook, before any request or tool call that follows)."""
        failure = await self.caller.notify(event, self.subscriptions.get(event, ()), argument)
        if failure is not None:
            raise self._fail(event, failure)

    async def _settled(self) -> None:
        """Wait for the notifications in flight; raise the first failure among them."""
        if not self.caller.busy:
            return
        failure = await self.caller.settle()
        if failure is not None:
            raise self._fail(failure.event, failure)

    async def on_run_start(self, prompt: str) -> None:
        await self._settled()

    async def on_run_end(self, reason: str) -> None:
        if reason != "cancelled":  # a cancelled run stops at once; `session_end` reaps
            await self._settled()

    async def session_start(self) -> None:
        await self._notify("session_start", SessionEvent(self.agent))

    async def session_end(self, reason: str = "") -> None:
        """Tell the extensions (after what is still in flight); then stop what is left
        of abandoned handlers."""
        try:
            earlier = await self.caller.settle()
            subscriptions = self.subscriptions.get("session_end")
            failure = None
            if subscriptions:
                chain = Notification(SessionEvent(self.agent, reason))
                failure = await self.caller.run("session_end", subscriptions, chain)
            if earlier is not None or failure is not None:
                raise self._fail("session_end", earlier or failure)  # type: ignore[arg-type]
        finally:
            await self.caller.reap()

    async def on_turn_start(self, turn: int) -> None:
        subscriptions = self.subscriptions.get("turn_start")
        if subscriptions:
            event = TurnEvent(turn)
            if not self.caller.post("turn_start", subscriptions, event):  # not all plain
                await self._notify("turn_start", event)

    async def on_turn_end(self, turn: int, message: AssistantMessage) -> None:
        subscriptions = self.subscriptions.get("turn_end")
        if subscriptions:
            event = TurnEvent(turn, message)
            if not self.caller.post("turn_end", subscriptions, event):  # not all plain
                await self._notify("turn_end", event)

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        subscriptions = self.subscriptions.get("context")
        if not subscriptions:
            await self._settled()
            return messages
        copy = self._copies.take(messages)  # one copy protects the history
        chain = _ContextChain(copy)
        failure = await self.caller.run("context", subscriptions, chain)
        current = chain.current
        if failure is not None:
            raise self._fail("context", failure)
        if current is copy:
            if self._copies.give_back(copy, messages):
                # Nothing changed: the runner's own list goes on, so the request stays
                # a view of it and what is counted of it per request does not grow with
                # the history (issue 21).
                return messages
            return copy
        if current == messages:  # a handler returned a list equal to it (identity first)
            return messages
        return current

    def _read_only(self, call: ToolCall) -> ToolCall:
        """The read-only view of `call`, made once for its `tool_call` and
        `tool_result` events."""
        viewed = self._viewed
        if viewed is not None and viewed[0] is call:
            return viewed[1]
        view = read_only_call(call)
        self._viewed = (call, view)
        return view

    async def before_tool_call(self, call: ToolCall) -> CallDecision:
        subscriptions = self.subscriptions.get("tool_call")
        if not subscriptions:
            await self._settled()
            return ALLOW
        event = ToolCallEvent(
            self._read_only(call),
            self.tool_sources.get(call.name, ""),
            self.workspace,
            current_permission.get(),
        )
        chain = _ToolCallChain(event)
        failure = await self.caller.run("tool_call", subscriptions, chain)
        if failure is not None:
            if failure.event:  # an earlier notification's: the run fails, as it would have
                raise self._fail(failure.event, failure)
            reason = failure.describe("tool_call", self.timeout)
            return CallDecision(True, f"{reason} (fail closed)", failure.extension)
        return chain.decision

    async def after_tool_result(self, call: ToolCall, result: ToolResult) -> ResultOutcome:
        subscriptions = self.subscriptions.get("tool_result")
        if not subscriptions:
            await self._settled()
            return ResultOutcome(result)
        chain = _ResultChain(self._read_only(call), result)
        failure = await self.caller.run("tool_result", subscriptions, chain)
        if failure is not None:
            raise self._fail("tool_result", failure)
        return ResultOutcome(chain.result, tuple(chain.rewritten))


class _ToolCallChain:
    """Asks each guard in turn; the first block ends the chain."""

    def __init__(self, event: ToolCallEvent) -> None:
        self.event = event
        self.decision = ALLOW

    def argument(self) -> ToolCallEvent:
        return self.event

    def accept(self, extension: str, result: Any) -> bool:
        self.decision = _decision(result, extension)
        return self.decision.blocked


class _ResultChain:
    """Each handler sees the result as the previous one left it (read-only)."""

    def __init__(self, call: ToolCall, result: ToolResult) -> None:
        self.call = call  # already a read-only view
        self.result = result
        self.rewritten: list[str] = []
        self._event: ToolResultEvent | None = None  # made once per result, not per handler

    def argument(self) -> ToolResultEvent:
        if self._event is None:
            self._event = ToolResultEvent(self.call, self.result)
        return self._event

    def accept(self, extension: str, patch: Any) -> bool:
        if patch is not None:
            patched = _apply_patch(self.result, patch, extension)
            if patched != self.result:
                self.rewritten.append(extension)
            self.result = patched
            self._event = None
        return False


class _ContextChain:
    """Each handler's output (or the list it changed in place) is the next one's input."""

    def __init__(self, messages: list[Message]) -> None:
        self.current = messages

    def argument(self) -> list[Message]:
        return self.current

    def accept(self, extension: str, result: Any) -> bool:
        current = self.current
        if result is None or (
            result is current and isinstance(current, ContextCopy) and not current.changed
        ):
            return False  # nothing returned, or the copy it was given, unchanged
        if not isinstance(result, list | tuple):
            raise ExtensionError(
                f"extension `{extension}`: context handler returned "
                f"{type(result).__name__}; expected a list of messages or None"
            )
        strays = [type(m).__name__ for m in result if not isinstance(m, MESSAGE_TYPES)]
        if strays:
            raise ExtensionError(
                f"extension `{extension}`: context handler returned a list "
                f"holding {', '.join(sorted(set(strays)))}; every item must be a message "
                "(assembler.messages)"
            )
        self.current = list(result)
        return False


def _decision(result: Any, extension: str) -> CallDecision:
    """None allows; `Block` or `{"block": True, "reason": str}` blocks; anything else
    blocks too, saying what it was: a guard's mistake must never let a call through."""
    if result is None:
        return ALLOW
    if isinstance(result, Block):
        return CallDecision(True, str(result.reason or "blocked"), extension)
    if (
        isinstance(result, Mapping)
        and result.get("block") is True
        and set(result) <= {"block", "reason"}
        and isinstance(result.get("reason", ""), str)
    ):
        return CallDecision(True, str(result.get("reason") or "blocked"), extension)
    try:
        shown = _shown.repr(result)
    except Exception as e:  # a hostile __repr__ is still a block
        shown = f"<unprintable: {type(e).__name__}>"
    return CallDecision(
        True,
        f"tool_call handler returned {type(result).__name__}: {shown}; expected None to "
        "allow, or Block(reason) to block (fail closed)",
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
    # plain data again: a patch may be built from the read-only view it was given
    return replace(result, content=content, is_error=is_error, details=thaw(details))
