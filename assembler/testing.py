"""Test doubles for agents: models that answer from a script or a function.

Public API for users' tests (and ours). Both models record every `ModelRequest`, so a
test can check what the agent sent: the system prompt, the history, the tool schemas.

    model = ScriptedModel([tool_call("read", path="README.md"), text("Done.")])
    with model:                      # fails if a scripted step was never used
        ... run the agent with `model` ...
    assert model.requests[1].messages[-1].content == "..."
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any, Self

from assembler.messages import (
    AssistantMessage,
    ModelRequest,
    ResponseDone,
    StreamEvent,
    ToolCall,
    to_plain,
)
from assembler.providers.scripted import ScriptedProvider, ScriptStep, Step, stream_reply

__all__ = [
    "FunctionModel",
    "ScriptStep",
    "ScriptedModel",
    "Step",
    "reply",
    "text",
    "tool_call",
]


def text(content: str) -> AssistantMessage:
    """A step that answers with text only."""
    return AssistantMessage(text=content)


def tool_call(name: str, /, **arguments: Any) -> AssistantMessage:
    """A step that calls one tool: `tool_call("read", path="README.md")`.

    The call's id is filled in when it is replayed (`call_<reply>_<n>`).
    """
    return AssistantMessage(tool_calls=(ToolCall(id="", name=name, arguments=to_plain(arguments)),))


def reply(*parts: str | AssistantMessage) -> AssistantMessage:
    """One step from several parts: `reply("Checking.", tool_call("a"), tool_call("b"))`."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        else:
            texts.append(part.text)
            calls.extend(part.tool_calls)
    return AssistantMessage(text="".join(texts), tool_calls=tuple(calls))


class ScriptedModel(ScriptedProvider):
    """A `ModelProvider` that replays `steps` and records the requests it receives.

    Steps are mappings in the script format (`{text: ..., tool_calls: [...]}`),
    `AssistantMessage`s, or strings. Used as a context manager (sync or async), it
    checks on a clean exit that every step was replayed.
    """

    def __init__(self, steps: Iterable[Step | ScriptStep] = (), *, name: str = "scripted:test"):
        super().__init__(steps, name=name)

    @property
    def last_request(self) -> ModelRequest:
        """The most recent request; an AssertionError if there was none."""
        if not self.requests:
            raise AssertionError(f"{self.name} received no request")
        return self.requests[-1]

    def assert_consumed(self) -> None:
        """Fail if some scripted steps were never replayed, listing them."""
        remaining = self.remaining
        if remaining:
            first = self.replies + 1
            listing = "\n".join(
                f"  step {first + i}: {step.describe()}" for i, step in enumerate(remaining)
            )
            raise AssertionError(
                f"{self.name}: {len(remaining)} of {self.replies + len(remaining)} scripted "
                f"steps were never used (the model was asked {len(self.requests)} times):\n"
                f"{listing}"
            )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.assert_consumed()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
        if exc_type is None:
            self.assert_consumed()


Reply = AssistantMessage | str | ResponseDone
ReplyFunction = Callable[[ModelRequest], Reply | Awaitable[Reply]]


class FunctionModel:
    """A `ModelProvider` whose replies come from `fn(request)`, sync or async.

    `fn` returns an `AssistantMessage`, plain text, or a whole `ResponseDone` (to report
    usage and a stop reason, as a model honouring `request.settings.max_tokens` would);
    what it raises reaches the caller unchanged. Every request is recorded in `requests`.
    """

    def __init__(self, fn: ReplyFunction, *, name: str | None = None) -> None:
        self._fn = fn
        self._name = name or f"function:{getattr(fn, '__name__', 'model')}"
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        result = self._fn(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, ResponseDone):
            replies = stream_reply(
                result.message,
                result.usage,
                reply_number=len(self.requests),
                stop_reason=result.stop_reason,
            )
        else:
            message = AssistantMessage(text=result) if isinstance(result, str) else result
            replies = stream_reply(message, reply_number=len(self.requests))
        async for event in replies:
            yield event

    async def aclose(self) -> None:
        return None
