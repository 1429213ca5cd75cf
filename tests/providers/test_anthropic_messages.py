"""AnthropicProvider against a real loopback server speaking Messages API SSE."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
from wire.anthropic_server import (
    AnthropicServer,
    StreamReply,
    ToolUseSpec,
    anthropic_error,
    error_event,
    message_stream,
    stream,
)
from wire.drive import run_one

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    ModelRequest,
    ModelSettings,
    ToolCall,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.base import ModelProvider

READ = ToolSchema(
    name="read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)

RETRY_DELAY = re.compile(r"^Retrying request .*\bin ([0-9.]+) seconds")


def request(*messages: Any, system: str = "You are terse.", **kw: Any) -> ModelRequest:
    return ModelRequest(
        model="claude-test", system=system, messages=messages or (UserMessage("Hi"),), **kw
    )


def provider(server: AnthropicServer, **kw: Any) -> Callable[[], ModelProvider]:
    kw.setdefault("max_retries", 2)
    return lambda: AnthropicProvider(
        "claude-test", api_key="sk-ant-test", base_url=server.base_url, **kw
    )


def retry_delays(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The waits before each retry, as the SDK logs them (`... in 0.001000 seconds`)."""
    found = (RETRY_DELAY.search(r.getMessage()) for r in caplog.records)
    return [float(m[1]) for m in found if m]


def test_streams_text_and_usage(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(stream("Hel", "lo", " world", usage=(30, 4)))

    outcome = run_one(provider(anthropic_server), request())

    assert outcome.deltas == ["Hel", "lo", " world"]
    done = outcome.done
    assert done.message == AssistantMessage(text="Hello world")
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 4)
    assert done.stop_reason == "end_turn"


def test_text_and_two_tool_uses_with_input_split_across_deltas(
    anthropic_server: AnthropicServer,
) -> None:
    first = json.dumps({"path": "src/main.py", "limit": 20})
    anthropic_server.add(
        stream(
            "Reading both.",
            tool_uses=[
                ToolUseSpec("toolu_a", "read", list(first)),  # one character per delta
                ToolUseSpec("toolu_b", "now", []),  # no input deltas at all
            ],
        )
    )

    done = run_one(provider(anthropic_server), request(tools=(READ,))).done

    assert done.message.text == "Reading both."
    assert done.stop_reason == "tool_use"
    assert done.message.tool_calls == (
        ToolCall("toolu_a", "read", {"path": "src/main.py", "limit": 20}, raw_arguments=first),
        ToolCall("toolu_b", "now", {}, raw_arguments="{}"),
    )


@pytest.mark.parametrize(
    ("raw", "why"),
    [('{"path": "a.txt"', "not valid JSON"), ("[1, 2]", "must be a JSON object, not an array")],
)
def test_malformed_tool_input_becomes_an_error_on_the_call(
    anthropic_server: AnthropicServer, raw: str, why: str
) -> None:
    anthropic_server.add(stream(tool_uses=[ToolUseSpec("toolu_a", "read", [raw[:3], raw[3:]])]))

    (call,) = run_one(provider(anthropic_server), request()).done.message.tool_calls

    assert (call.id, call.name, call.arguments, call.raw_arguments) == (
        "toolu_a",
        "read",
        None,
        raw,
    )
    assert why in call.arguments_error


def test_wire_request_of_a_multi_turn_exchange(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(stream("Both are short."))
    history = (
        UserMessage("Summarise a.txt and b.txt"),
        ContextMessage("Memory: the user likes bullet points."),
        AssistantMessage(
            text="Reading.",
            tool_calls=(
                ToolCall("toolu_1", "read", {"path": "a.txt"}),
                ToolCall("toolu_2", "read", None, raw_arguments="{bad", arguments_error="x"),
            ),
        ),
        ToolResultMessage("toolu_1", "read", "alpha"),
        ToolResultMessage("toolu_2", "read", "arguments are not valid JSON", is_error=True),
        ContextMessage("Memory: keep it short."),
    )
    settings = ModelSettings(temperature=0.3, extra={"top_k": 5})

    outcome = run_one(
        provider(anthropic_server), request(*history, tools=(READ,), settings=settings)
    )
    assert outcome.error is None

    (received,) = anthropic_server.requests
    assert received.path == "/v1/messages"
    assert "sk-ant-test" in (
        received.headers.get("x-api-key", "") + received.headers.get("authorization", "")
    )
    assert "anthropic-version" in received.headers
    body = received.body
    assert body["model"] == "claude-test"
    assert body["stream"] is True
    assert body["max_tokens"] == 4096  # required by the API; the default when unset
    assert body["temperature"] == 0.3
    assert body["top_k"] == 5
    # prompt caching is on by default: breakpoints on the tools, the system prompt and
    # the last block of the two latest user-side messages (four, the API's most)
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": ephemeral}
    ]
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file.",
            "input_schema": READ.parameters,
            "cache_control": ephemeral,
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summarise a.txt and b.txt"},
                {
                    "type": "text",
                    "text": "Memory: the user likes bullet points.",
                    "cache_control": ephemeral,
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "arguments are not valid JSON",
                    "is_error": True,
                },
                {"type": "text", "text": "Memory: keep it short.", "cache_control": ephemeral},
            ],
        },
    ]


def test_no_system_and_no_tools_when_empty_and_max_tokens_from_settings(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.add(stream("ok"))

    outcome = run_one(
        provider(anthropic_server, settings=ModelSettings(max_tokens=100)), request(system="")
    )
    assert outcome.error is None

    body = anthropic_server.bodies[0]
    assert "system" not in body
    assert "tools" not in body
    assert "temperature" not in body
    assert body["max_tokens"] == 100
    assert all(m["role"] != "system" for m in body["messages"])


def test_rate_limit_then_success_uses_the_sdk_retry(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(
        anthropic_error(429, "Slow down", kind="rate_limit_error", retry_after_ms=5)
    )
    anthropic_server.add(stream("fine"))

    outcome = run_one(provider(anthropic_server), request())

    assert outcome.done.message.text == "fine"
    assert len(anthropic_server.requests) == 2


def test_overloaded_until_the_sdk_gives_up(
    anthropic_server: AnthropicServer, caplog: pytest.LogCaptureFixture
) -> None:
    anthropic_server.add(
        *[anthropic_error(529, "Overloaded", kind="overloaded_error", retry_after_ms=1)] * 3
    )

    with caplog.at_level(logging.INFO, logger="anthropic"):
        outcome = run_one(provider(anthropic_server, max_retries=2), request())

    assert isinstance(outcome.error, ProviderError)
    message = str(outcome.error)
    assert message.startswith("anthropic:claude-test: ")
    assert "overloaded (HTTP 529, gave up after 2 retries): Overloaded" in message
    assert len(anthropic_server.requests) == 3
    retry_counts = [r.headers["x-stainless-retry-count"] for r in anthropic_server.requests]
    assert retry_counts == ["0", "1", "2"]
    # the SDK waited what the server's `retry-after-ms: 1` asked, not its own backoff
    assert retry_delays(caplog) == [0.001, 0.001]


def test_bad_request_is_not_retried(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(
        anthropic_error(400, "messages: roles must alternate", kind="invalid_request_error")
    )

    outcome = run_one(provider(anthropic_server), request())

    assert isinstance(outcome.error, ProviderError)
    assert "HTTP 400" in str(outcome.error)
    assert "roles must alternate" in str(outcome.error)
    assert len(anthropic_server.requests) == 1


def test_stream_cut_before_first_delta_is_retried_once(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(stream("never", cut_after=3))  # message_start, ping, block start
    anthropic_server.add(stream("second", " try"))

    outcome = run_one(provider(anthropic_server), request())

    assert outcome.deltas == ["second", " try"]
    assert len(anthropic_server.requests) == 2


def test_error_event_before_first_delta_is_retried_once(anthropic_server: AnthropicServer) -> None:
    frames = message_stream("never")
    anthropic_server.add(StreamReply((*frames[:2], error_event())))
    anthropic_server.add(stream("recovered"))

    outcome = run_one(provider(anthropic_server), request())

    assert outcome.done.message.text == "recovered"
    assert len(anthropic_server.requests) == 2


def test_error_event_twice_reports_the_server_error(anthropic_server: AnthropicServer) -> None:
    frames = message_stream("never")
    broken = StreamReply((*frames[:2], error_event("overloaded_error", "Overloaded")))
    anthropic_server.add(broken, broken)

    outcome = run_one(provider(anthropic_server), request())

    assert isinstance(outcome.error, ProviderError)
    assert "before any output, twice" in str(outcome.error)
    assert "Overloaded" in str(outcome.error)


def test_stream_cut_after_first_delta_fails_without_retry(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.add(stream("Hel", "lo", cut_after=4), stream("never used"))

    outcome = run_one(provider(anthropic_server), request())

    assert outcome.deltas == ["Hel"]
    assert isinstance(outcome.error, ProviderError)
    message = str(outcome.error)
    assert message.startswith("anthropic:claude-test: ")
    assert "after output had started" in message
    assert "connection lost" in message
    assert len(anthropic_server.requests) == 1


def test_stream_ending_without_message_stop_is_incomplete(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.add(stream("Hel", "lo", cut_after=5, end_early=True))

    outcome = run_one(provider(anthropic_server), request())

    assert outcome.deltas == ["Hel", "lo"]
    assert isinstance(outcome.error, ProviderError)
    assert "ended before the response was complete" in str(outcome.error)
