"""The loopback servers refuse a history the real APIs refuse: a tool call without its
result (what a run killed mid-tool leaves behind), or a result without its call. Both
come back through the official SDKs as HTTP 400, a `ProviderError`, so a resume test
against these servers proves the resumed transcript is one the real APIs accept."""

from __future__ import annotations

from typing import Any

import pytest
from wire.anthropic_server import AnthropicServer
from wire.anthropic_server import stream as anthropic_stream
from wire.drive import run_one
from wire.openai_server import OpenAIServer
from wire.openai_server import stream as openai_stream

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.sessions.context import INTERRUPTED

CALL = ToolCall("call_1", "bash", {"command": "sleep 30"})
ASKED = UserMessage("run it")
CALLED = AssistantMessage("", (CALL,))
ANSWERED = ToolResultMessage("call_1", "bash", INTERRUPTED, is_error=True)

HISTORIES: dict[str, tuple[Message, ...]] = {
    "dangling call at the end": (ASKED, CALLED),
    "dangling call then a user turn": (ASKED, CALLED, UserMessage("go on")),
    "one of two calls answered": (
        ASKED,
        AssistantMessage("", (CALL, ToolCall("call_2", "read", {"path": "x"}))),
        ANSWERED,
        UserMessage("go on"),
    ),
    "result without its call": (ASKED, ANSWERED, UserMessage("go on")),
}


def openai(server: OpenAIServer) -> Any:
    return lambda: OpenAIChatProvider("m", api_key="k", base_url=server.base_url, max_retries=0)


def anthropic(server: AnthropicServer) -> Any:
    return lambda: AnthropicProvider("m", api_key="k", base_url=server.base_url, max_retries=0)


@pytest.mark.parametrize("history", HISTORIES, ids=list(HISTORIES))
def test_openai_refuses_a_broken_tool_history(history: str, openai_server: OpenAIServer) -> None:
    openai_server.add(openai_stream("unused"))
    outcome = run_one(openai(openai_server), ModelRequest("m", "s", HISTORIES[history]))
    assert isinstance(outcome.error, ProviderError)
    assert "400" in str(outcome.error)
    assert "tool" in str(outcome.error)
    assert len(openai_server.requests) == 1  # refused, not retried, no reply used up


@pytest.mark.parametrize("history", HISTORIES, ids=list(HISTORIES))
def test_anthropic_refuses_a_broken_tool_history(
    history: str, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.add(anthropic_stream("unused"))
    outcome = run_one(anthropic(anthropic_server), ModelRequest("m", "s", HISTORIES[history]))
    assert isinstance(outcome.error, ProviderError)
    assert "400" in str(outcome.error)
    assert "tool_use" in str(outcome.error) or "tool_result" in str(outcome.error)


def test_both_accept_the_history_a_resume_repairs(
    openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    repaired = (ASKED, CALLED, ANSWERED, UserMessage("go on"))
    openai_server.add(openai_stream("fine"))
    anthropic_server.add(anthropic_stream("fine"))
    assert run_one(openai(openai_server), ModelRequest("m", "s", repaired)).done.message.text == (
        "fine"
    )
    done = run_one(anthropic(anthropic_server), ModelRequest("m", "s", repaired)).done
    assert done.message.text == "fine"
