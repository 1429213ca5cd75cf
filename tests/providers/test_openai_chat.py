"""OpenAIChatProvider against a real loopback server speaking Chat Completions SSE."""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Callable
from typing import Any

import pytest
from wire.drive import run, run_one
from wire.openai_server import (
    DONE,
    OpenAIServer,
    StreamReply,
    ToolCallSpec,
    delta_frame,
    openai_error,
    stream,
)

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
from assembler.providers.base import ModelProvider
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.providers.registry import create_provider

READ = ToolSchema(
    name="read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)

RETRY_DELAY = re.compile(r"^Retrying request .*\bin ([0-9.]+) seconds")


def request(*messages: Any, system: str = "You are terse.", **kw: Any) -> ModelRequest:
    return ModelRequest(
        model="gpt-test", system=system, messages=messages or (UserMessage("Hi"),), **kw
    )


def provider(server: OpenAIServer, **kw: Any) -> Callable[[], ModelProvider]:
    kw.setdefault("max_retries", 2)
    return lambda: OpenAIChatProvider("gpt-test", api_key="sk-test", base_url=server.base_url, **kw)


def retry_delays(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The waits before each retry, as the SDK logs them (`... in 0.001000 seconds`)."""
    found = (RETRY_DELAY.search(r.getMessage()) for r in caplog.records)
    return [float(m[1]) for m in found if m]


def test_streams_text_and_usage(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("Hel", "lo", " world", usage=(12, 3)))

    outcome = run_one(provider(openai_server), request())

    assert outcome.deltas == ["Hel", "lo", " world"]
    done = outcome.done
    assert done.message == AssistantMessage(text="Hello world")
    assert (done.usage.input_tokens, done.usage.output_tokens) == (12, 3)
    assert done.stop_reason == "stop"


def test_two_tool_calls_with_arguments_split_across_many_deltas(
    openai_server: OpenAIServer,
) -> None:
    first = json.dumps({"path": "src/main.py", "limit": 20})
    second = json.dumps({"path": "README.md"})
    openai_server.add(
        stream(
            "Reading both.",
            tool_calls=[
                ToolCallSpec("call_a", "read", list(first)),  # one character per delta
                ToolCallSpec("call_b", "read", [second[:5], second[5:9], second[9:]]),
            ],
        )
    )

    done = run_one(provider(openai_server), request(tools=(READ,))).done

    assert done.message.text == "Reading both."
    assert done.stop_reason == "tool_calls"
    assert done.message.tool_calls == (
        ToolCall("call_a", "read", {"path": "src/main.py", "limit": 20}, raw_arguments=first),
        ToolCall("call_b", "read", {"path": "README.md"}, raw_arguments=second),
    )


def test_interleaved_tool_call_deltas_are_assembled_by_index(openai_server: OpenAIServer) -> None:
    def call(index: int, **fields: Any) -> bytes:
        return delta_frame({"tool_calls": [{"index": index, **fields}]})

    openai_server.add(
        StreamReply(
            (
                delta_frame({"role": "assistant", "content": None}),
                call(1, id="call_y", type="function", function={"name": "b", "arguments": ""}),
                call(0, id="call_x", type="function", function={"name": "a", "arguments": '{"n"'}),
                call(1, function={"arguments": '{"m": '}),
                call(0, function={"arguments": ": 1}"}),
                call(1, function={"arguments": "2}"}),
                delta_frame({}, "tool_calls"),
                DONE,
            )
        )
    )

    done = run_one(provider(openai_server), request()).done

    assert [(c.id, c.name, c.arguments) for c in done.message.tool_calls] == [
        ("call_x", "a", {"n": 1}),
        ("call_y", "b", {"m": 2}),
    ]
    assert done.usage.input_tokens == 0  # this server sent no usage chunk


def test_tool_call_without_arguments_counts_as_empty_object(openai_server: OpenAIServer) -> None:
    openai_server.add(stream(tool_calls=[ToolCallSpec("call_a", "now", [])]))

    (call,) = run_one(provider(openai_server), request()).done.message.tool_calls

    assert call.arguments == {}
    assert call.arguments_error == ""


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ('{"path": "a.txt"', "not valid JSON"),
        ('["a.txt"]', "must be a JSON object, not an array"),
        ('"a.txt"', "must be a JSON object, not a string"),
    ],
)
def test_malformed_tool_arguments_become_an_error_on_the_call(
    openai_server: OpenAIServer, raw: str, why: str
) -> None:
    openai_server.add(stream(tool_calls=[ToolCallSpec("call_a", "read", [raw[:4], raw[4:]])]))

    outcome = run_one(provider(openai_server), request())

    (call,) = outcome.done.message.tool_calls
    assert call.id == "call_a"
    assert call.name == "read"
    assert call.arguments is None
    assert call.raw_arguments == raw
    assert why in call.arguments_error


def test_wire_request_of_a_multi_turn_exchange(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("Both files are short."))
    history = (
        UserMessage("Summarise a.txt and b.txt"),
        ContextMessage("Memory: the user likes bullet points."),
        AssistantMessage(
            text="Reading.",
            tool_calls=(
                ToolCall("call_1", "read", {"path": "a.txt"}),
                ToolCall("call_2", "read", None, raw_arguments="{bad", arguments_error="x"),
            ),
        ),
        ToolResultMessage("call_1", "read", "alpha"),
        ToolResultMessage("call_2", "read", "error: arguments are not valid JSON", is_error=True),
    )
    settings = ModelSettings(temperature=0.2, max_tokens=300, extra={"seed": 7})

    outcome = run_one(provider(openai_server), request(*history, tools=(READ,), settings=settings))
    assert outcome.error is None

    (received,) = openai_server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test"
    body = received.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 300  # a custom base_url gets the widely supported name
    assert "max_completion_tokens" not in body
    assert body["seed"] == 7
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": READ.parameters,
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Summarise a.txt and b.txt"},
        {"role": "user", "content": "Memory: the user likes bullet points."},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": "{bad"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "alpha"},
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "error: arguments are not valid JSON",
        },
    ]


def test_no_system_message_and_no_tools_when_empty(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("ok"))

    assert run_one(provider(openai_server), request(system="")).error is None

    body = openai_server.bodies[0]
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert "tools" not in body
    assert "temperature" not in body


def test_assistant_message_with_only_tool_calls_sends_empty_content(
    openai_server: OpenAIServer,
) -> None:
    openai_server.add(stream("done"))
    history = (
        UserMessage("go"),
        AssistantMessage(tool_calls=(ToolCall("c1", "now", {}),)),
        ToolResultMessage("c1", "now", "12:00"),
    )

    assert run_one(provider(openai_server), request(*history)).error is None

    assistant = openai_server.bodies[0]["messages"][2]
    assert assistant["content"] == ""  # never null: llama-cpp-python refuses it (HTTP 500)
    assert assistant["tool_calls"][0]["function"] == {"name": "now", "arguments": "{}"}


def test_rate_limit_then_success_uses_the_sdk_retry(openai_server: OpenAIServer) -> None:
    openai_server.add(openai_error(429, "Slow down", kind="rate_limit_exceeded", retry_after_ms=5))
    openai_server.add(stream("fine"))

    outcome = run_one(provider(openai_server), request())

    assert outcome.done.message.text == "fine"
    assert len(openai_server.requests) == 2
    assert openai_server.requests[1].headers["x-stainless-retry-count"] == "1"


def test_server_errors_until_the_sdk_gives_up(
    openai_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.add(*[openai_error(500, "The engine broke", retry_after_ms=1)] * 3)

    with caplog.at_level(logging.INFO, logger="openai"):
        outcome = run_one(provider(openai_server, max_retries=2), request())

    assert isinstance(outcome.error, ProviderError)
    message = str(outcome.error)
    assert message.startswith("openai:gpt-test: ")
    assert "HTTP 500" in message
    assert "gave up after 2 retries" in message
    assert "The engine broke" in message
    assert "\n" not in message
    assert len(openai_server.requests) == 3
    retry_counts = [r.headers["x-stainless-retry-count"] for r in openai_server.requests]
    assert retry_counts == ["0", "1", "2"]
    # the SDK waited what the server's `retry-after-ms: 1` asked, not its own backoff
    assert retry_delays(caplog) == [0.001, 0.001]


def test_authentication_error_is_not_retried(openai_server: OpenAIServer) -> None:
    openai_server.add(openai_error(401, "Incorrect API key provided", kind="invalid_request_error"))

    outcome = run_one(provider(openai_server), request())

    assert isinstance(outcome.error, ProviderError)
    assert "authentication failed" in str(outcome.error)
    assert "Incorrect API key provided" in str(outcome.error)
    assert len(openai_server.requests) == 1


def test_stream_cut_before_first_delta_is_retried_once(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("never", "seen", cut_after=1))  # only the role chunk arrives
    openai_server.add(stream("second", " try"))

    outcome = run_one(provider(openai_server), request())

    assert outcome.deltas == ["second", " try"]
    assert outcome.done.message.text == "second try"
    assert len(openai_server.requests) == 2


def test_stream_that_ends_without_finishing_is_retried_once(openai_server: OpenAIServer) -> None:
    openai_server.add(
        stream(tool_calls=[ToolCallSpec("c", "read", ['{"pa'])], cut_after=3, end_early=True)
    )
    openai_server.add(stream("ok"))

    outcome = run_one(provider(openai_server), request())

    assert outcome.done.message == AssistantMessage(text="ok")
    assert len(openai_server.requests) == 2


def test_stream_cut_before_first_delta_twice_fails(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("a", cut_after=1), stream("b", cut_after=1), stream("never used"))

    outcome = run_one(provider(openai_server), request())

    assert isinstance(outcome.error, ProviderError)
    assert "openai:gpt-test" in str(outcome.error)
    assert "before any output, twice" in str(outcome.error)
    assert outcome.events == []
    assert len(openai_server.requests) == 2


def test_stream_cut_after_first_delta_fails_without_retry(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("Hel", "lo", cut_after=2), stream("never used"))

    outcome = run_one(provider(openai_server), request())

    assert outcome.deltas == ["Hel"]
    assert isinstance(outcome.error, ProviderError)
    message = str(outcome.error)
    assert message.startswith("openai:gpt-test: ")
    assert "after output had started" in message
    assert "\n" not in message
    assert len(openai_server.requests) == 1


def test_unreachable_server_is_a_provider_error() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    make = lambda: OpenAIChatProvider(  # noqa: E731
        "gpt-test", api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0
    )

    outcome = run_one(make, request())

    assert isinstance(outcome.error, ProviderError)
    assert "cannot reach http://127.0.0.1:" in str(outcome.error)
    assert str(outcome.error).endswith("(is the server at this address running?)")


@pytest.mark.parametrize(
    ("shortcut", "hint"),
    [
        ("ollama", "(is Ollama running? `ollama serve`)"),
        ("llamacpp", "(is llama-server running? `llama-server -m MODEL.gguf --port 8080`)"),
        ("vllm", "(is vLLM running? `vllm serve MODEL`)"),
        ("lmstudio", "(is LM Studio's server running? `lms server start`)"),
    ],
)
def test_an_unreachable_local_server_names_the_likely_cause(shortcut: str, hint: str) -> None:
    """The local shortcuts (`ollama:qwen3`) say how to start their server; the request
    goes to a real closed port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    make = lambda: create_provider(  # noqa: E731
        shortcut, "m", base_url=f"http://127.0.0.1:{port}/v1", options={"max_retries": 0}, env={}
    )
    outcome = run_one(make, request())
    assert isinstance(outcome.error, ProviderError)
    message = str(outcome.error)
    assert message.startswith(f"{shortcut}:m: cannot reach http://127.0.0.1:{port}/v1")
    assert message.endswith(hint)


def test_several_requests_share_one_client(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("one"), stream("two"))

    first, second = run(provider(openai_server), request(), request())

    assert (first.done.message.text, second.done.message.text) == ("one", "two")


def test_registry_provider_for_a_local_server_needs_no_key(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("local"))

    outcome = run_one(
        lambda: create_provider("openai", "llama3:8b", base_url=openai_server.base_url, env={}),
        ModelRequest(model="llama3:8b", system="", messages=(UserMessage("hi"),)),
    )

    assert outcome.done.message.text == "local"
    assert openai_server.bodies[0]["model"] == "llama3:8b"
    assert openai_server.requests[0].headers["authorization"] == "Bearer no-key-needed"
