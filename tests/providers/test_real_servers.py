"""Both providers against what real model servers sent, replayed byte for byte.

The bytes are recorded exchanges with llama-cpp-python's server, llama.cpp's
`llama-server` and a LiteLLM proxy (`tests/data/wire/`, see `wire.recorded`); the
providers read them through the official `openai` and `anthropic` SDKs over a real
loopback HTTP connection.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from wire.anthropic_server import AnthropicServer
from wire.drive import run, run_one
from wire.openai_server import OpenAIServer
from wire.recorded import llama_cpp_python_like, recording

from assembler import build_agent, load_manifest
from assembler.errors import ContextOverflowError, ProviderError
from assembler.messages import (
    AssistantMessage,
    ForcedTool,
    ModelRequest,
    ModelSettings,
    ToolCall,
    ToolResultMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.openai_chat import OpenAIChatProvider

LS = ToolSchema(
    name="ls",
    description="List files in a directory of the workspace.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
FORCE_LS = ModelSettings(tool_choice=ForcedTool("ls"))


def openai(server: OpenAIServer) -> Any:
    return lambda: OpenAIChatProvider(
        "smollm2", api_key="none", base_url=server.base_url, max_retries=0
    )


def anthropic(server: AnthropicServer) -> Any:
    return lambda: AnthropicProvider(
        "smollm2", api_key="none", base_url=server.base_url, max_retries=0
    )


def ask(*messages: Any, **kw: Any) -> ModelRequest:
    return ModelRequest(
        "smollm2",
        "You list files with the ls tool.",
        messages or (UserMessage("What files are in the workspace?"),),
        **kw,
    )


# --- tool-call names, repeated in every chunk ---------------------------------------


@pytest.mark.parametrize("server", ["llama-cpp-python", "litellm"])
def test_a_tool_name_repeated_in_every_chunk_is_taken_once(
    openai_server: OpenAIServer, server: str
) -> None:
    recorded = recording(f"{server}/tool-call-stream-forced")
    names = [
        call["function"].get("name")
        for event in recorded.events
        for choice in event["choices"]
        for call in choice["delta"].get("tool_calls") or ()
    ]
    assert names.count("ls") == 9  # the server really repeats it (in `function_call` too)
    openai_server.add(recorded.reply())

    done = run_one(openai(openai_server), ask(tools=(LS,), settings=FORCE_LS)).done

    (call,) = done.message.tool_calls
    assert call.name == "ls"
    assert call.arguments == {"path": "file.txt"}
    assert call.id.startswith("call__0_ls_cmpl-")
    assert done.stop_reason == "tool_calls"
    assert done.usage == Usage()  # llama-cpp-python sends no usage chunk


# --- assistant messages with tool calls: content "" ---------------------------------


def test_a_tool_call_message_goes_back_with_empty_content_which_llama_cpp_python_accepts(
    openai_server: OpenAIServer,
) -> None:
    openai_server.respond_with(llama_cpp_python_like)
    history = (
        UserMessage("What files are in the workspace?"),
        AssistantMessage(tool_calls=(ToolCall("call_1", "ls", {"path": "."}),)),
        ToolResultMessage("call_1", "ls", "README.md\nsrc/"),
    )

    done = run_one(openai(openai_server), ask(*history, tools=(LS,))).done

    assert done.message.text.startswith("The workspace is a directory")
    sent = openai_server.bodies[0]["messages"][2]
    assert sent["role"] == "assistant"
    assert sent["content"] == ""


def test_the_lookalike_refuses_null_content_as_the_real_server_did(
    openai_server: OpenAIServer,
) -> None:
    """The responder is faithful: the recorded HTTP 500 for `content: null`."""
    openai_server.respond_with(llama_cpp_python_like)
    body = recording("llama-cpp-python/assistant-content-null").request["body"]

    reply = httpx2.post(openai_server.base_url + "/chat/completions", json=body)

    assert reply.status_code == 500
    assert "Input should be a valid string" in reply.text


@pytest.mark.parametrize(
    "name", ["llama-cpp-python/context-overflow-stream", "llama-cpp-python/tool-choice-auto-stream"]
)
def test_an_empty_http_200_is_an_error_that_says_so(openai_server: OpenAIServer, name: str) -> None:
    openai_server.add(recording(name).reply(), recording(name).reply())

    outcome = run_one(openai(openai_server), ask())

    assert isinstance(outcome.error, ProviderError)
    assert "the server sent an empty response" in str(outcome.error)
    assert len(openai_server.requests) == 2  # the one retry of a stream that broke


# --- a whole agent run against a llama-cpp-python-like server ------------------------


def test_an_agent_calls_a_tool_through_a_server_that_needs_tool_choice(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """llama-cpp-python calls tools only when `tool_choice` names one; with it the
    tool runs once and the model answers from its result on the next request."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "file.txt").write_text("hello\n")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: local\nidentity: You list files with the ls tool.\nworkspace: ws\n"
        "model:\n  provider: llamacpp\n  name: smollm2\n"
        f"  base_url: {openai_server.base_url}\n"
        "  tool_choice: {tool: ls}\n  options: {max_retries: 0}\n"
        "tools:\n  sets:\n    - builtin: [ls]\n"
    )
    openai_server.respond_with(llama_cpp_python_like)
    agent = build_agent(load_manifest(manifest), record_session=False, env={})

    async def go() -> str:
        async with agent:
            return (await agent.prompt("What files are in the workspace?")).text

    answer = asyncio.run(go())

    assert answer.startswith("The workspace is a directory")
    first, second = openai_server.bodies
    assert first["tool_choice"] == {"type": "function", "function": {"name": "ls"}}
    assert "tool_choice" not in second  # reset after the tool ran: no loop of `ls`
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["content"] == ""
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "ls"
    assert "file.txt" in second["messages"][3]["content"]  # ls ran, with the right name
    assert openai_server.requests[0].headers["authorization"] == "Bearer no-key-needed"


# --- Anthropic wire: LiteLLM's fragmented tool_use ----------------------------------


def test_tool_use_blocks_sharing_one_id_are_one_call(anthropic_server: AnthropicServer) -> None:
    recorded = recording("litellm/anthropic-tool-use-stream-forced")
    starts = [e for e in recorded.events if e["type"] == "content_block_start"]
    assert len(starts) == 9 and len({e["content_block"]["id"] for e in starts}) == 1
    anthropic_server.add(recorded.reply())

    done = run_one(anthropic(anthropic_server), ask(tools=(LS,), settings=FORCE_LS)).done

    (call,) = done.message.tool_calls
    assert (call.name, call.arguments) == ("ls", {"path": "file.txt"})
    assert call.raw_arguments == '{"path": "file.txt"}'
    assert done.stop_reason == "tool_use"
    assert done.usage == Usage(input_tokens=14, output_tokens=70)
    assert anthropic_server.bodies[0]["tool_choice"] == {"type": "tool", "name": "ls"}


# --- llama-server: usage, and the context overflow on both wires --------------------


def test_llama_server_reports_usage_in_its_last_chunk(openai_server: OpenAIServer) -> None:
    openai_server.add(recording("llama-server/chat-stream").reply())

    done = run_one(openai(openai_server), ask(UserMessage("Count from one to five."))).done

    assert done.message.text.startswith("1. 1\n2. 2")
    assert done.usage == Usage(input_tokens=28, output_tokens=25, cache_read_tokens=0)
    assert openai_server.bodies[0]["stream_options"] == {"include_usage": True}


def test_llama_server_anthropic_usage_counts_cached_input(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.add(recording("llama-server/anthropic-messages-stream").reply())

    done = run_one(anthropic(anthropic_server), ask(UserMessage("Count from one to five."))).done

    assert done.message.text.startswith("1. 1\n2. 2")
    # message_start: input_tokens 1, cache_read_input_tokens 27; message_delta: output 25
    assert done.usage == Usage(input_tokens=28, output_tokens=25, cache_read_tokens=27)
    assert done.usage.uncached_input_tokens == 1


def test_llama_server_context_overflow_openai_wire(openai_server: OpenAIServer) -> None:
    openai_server.add(recording("llama-server/context-overflow").reply())

    outcome = run_one(openai(openai_server), ask())

    error = outcome.error
    assert isinstance(error, ContextOverflowError)
    assert (error.prompt_tokens, error.context_window) == (6031, 2048)
    assert str(error) == (
        "openai:smollm2: the prompt is too long for the model's context window: the request "
        "was rejected (HTTP 400): request (6031 tokens) exceeds the available context size "
        "(2048 tokens), try increasing it"
    )
    assert len(openai_server.requests) == 1  # never retried as it stands


def test_llama_server_context_overflow_anthropic_wire(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(recording("llama-server/anthropic-context-overflow").reply())

    error = run_one(anthropic(anthropic_server), ask()).error

    assert isinstance(error, ContextOverflowError)
    assert (error.prompt_tokens, error.context_window) == (6031, 2048)
    assert "exceeds the available context size" in str(error)


# --- LiteLLM: plain text, and an error that is not an overflow ----------------------


def test_litellm_chat_stream(openai_server: OpenAIServer) -> None:
    openai_server.add(recording("litellm/chat-stream").reply())

    done = run_one(openai(openai_server), ask(UserMessage("Count from one to five."))).done

    assert done.message.text.startswith("1. 1\n2. 2")
    assert done.stop_reason == "stop"


def test_litellm_unknown_model_is_a_plain_provider_error(openai_server: OpenAIServer) -> None:
    openai_server.add(recording("litellm/unknown-model").reply())

    (outcome,) = run(openai(openai_server), ask())

    assert type(outcome.error) is ProviderError
    assert "Invalid model name passed in model=no-such-model" in str(outcome.error)
    assert "(check the model name and base_url)" not in str(outcome.error)  # a 400, not 404
