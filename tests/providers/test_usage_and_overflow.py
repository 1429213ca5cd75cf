"""Usage on every response (cache tokens included), `stream_options` that a server may
refuse, and `ContextOverflowError` from the official APIs' overflow errors."""

from __future__ import annotations

from typing import Any

import pytest
from wire._server import ErrorReply, RecordedRequest, Reply, sse
from wire.anthropic_server import AnthropicServer, anthropic_error, message_stream
from wire.drive import run, run_one
from wire.openai_server import DONE, OpenAIServer, StreamReply, chat_stream
from wire.openai_server import _chunk as openai_chunk
from wire.openai_server import stream as openai_stream

from assembler.errors import ContextOverflowError, ProviderError
from assembler.messages import ModelRequest, Usage, UserMessage
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.openai_chat import OpenAIChatProvider

ASK = ModelRequest("m", "system", (UserMessage("hi"),))


def openai(server: OpenAIServer, **kw: Any) -> Any:
    kw.setdefault("max_retries", 0)
    return lambda: OpenAIChatProvider("m", api_key="k", base_url=server.base_url, **kw)


def anthropic(server: AnthropicServer) -> Any:
    return lambda: AnthropicProvider("m", api_key="k", base_url=server.base_url, max_retries=0)


# --- usage ------------------------------------------------------------------------


def test_openai_cached_prompt_tokens_are_cache_reads(openai_server: OpenAIServer) -> None:
    frames = chat_stream("hi", usage=None)[:-1]
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920},
    }
    openai_server.add(StreamReply((*frames, sse(openai_chunk([], usage=usage)), DONE)))

    done = run_one(openai(openai_server), ASK).done

    assert done.usage == Usage(input_tokens=2006, output_tokens=300, cache_read_tokens=1920)
    assert done.usage.uncached_input_tokens == 86


def test_openai_without_a_usage_chunk_gives_zeros(openai_server: OpenAIServer) -> None:
    openai_server.add(openai_stream("hi", usage=None))

    assert run_one(openai(openai_server), ASK).done.usage == Usage(0, 0, 0, 0)


def test_anthropic_cache_fields(anthropic_server: AnthropicServer) -> None:
    frames = message_stream("hi", usage=(10, 5))
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,'
        b'"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":1200,'
        b'"cache_read_input_tokens":3000,"output_tokens":1}}}\n\n'
    )
    anthropic_server.add(StreamReply((start, *frames[1:])))

    done = run_one(anthropic(anthropic_server), ASK).done

    assert done.usage == Usage(
        input_tokens=4210, output_tokens=5, cache_read_tokens=3000, cache_write_tokens=1200
    )


def test_usage_adds_every_field() -> None:
    total = Usage(10, 2, 5, 1) + Usage(20, 3, 7, 0)
    assert total == Usage(30, 5, 12, 1)


# --- stream_options ---------------------------------------------------------------


def refuses_stream_options(request: RecordedRequest) -> Reply:
    """A strictly validating server that does not know `stream_options` (as older vLLM
    and many pydantic-based servers answer an unknown field)."""
    if "stream_options" in request.body:
        message = (
            "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), "
            "'msg': 'Extra inputs are not permitted'}]"
        )
        return ErrorReply(400, {"object": "error", "message": message, "code": 400})
    return StreamReply(tuple(chat_stream("fine", usage=None)))


def test_a_server_that_refuses_stream_options_still_works(openai_server: OpenAIServer) -> None:
    openai_server.respond_with(refuses_stream_options)

    first, second = run(openai(openai_server), ASK, ASK)

    assert first.done.message.text == "fine"
    assert second.done.message.text == "fine"
    sent = [body.get("stream_options") for body in openai_server.bodies]
    assert sent == [{"include_usage": True}, None, None]  # refused once, then not asked


def test_other_400s_are_not_retried_without_stream_options(openai_server: OpenAIServer) -> None:
    openai_server.add(ErrorReply(400, {"error": {"message": "bad temperature"}}))

    outcome = run_one(openai(openai_server), ASK)

    assert isinstance(outcome.error, ProviderError)
    assert len(openai_server.requests) == 1


# --- context overflow -------------------------------------------------------------


def test_openai_context_length_exceeded(openai_server: OpenAIServer) -> None:
    message = (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130012 tokens. Please reduce the length of the messages."
    )
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    openai_server.add(ErrorReply(400, body))

    error = run_one(openai(openai_server), ASK).error

    assert isinstance(error, ContextOverflowError)
    assert isinstance(error, ProviderError)  # callers that know no better still catch it
    assert (error.prompt_tokens, error.context_window) == (130012, 128000)
    assert str(error).startswith(
        "openai:m: the prompt is too long for the model's context window: the request was "
        "rejected (HTTP 400): This model's maximum context length is 128000 tokens."
    )


def test_openai_overflow_known_by_its_code_alone(openai_server: OpenAIServer) -> None:
    body = {"error": {"message": "Too long.", "type": "x", "code": "context_length_exceeded"}}
    openai_server.add(ErrorReply(400, body))

    error = run_one(openai(openai_server), ASK).error

    assert isinstance(error, ContextOverflowError)
    assert (error.prompt_tokens, error.context_window) == (None, None)


@pytest.mark.parametrize(
    ("message", "figures"),
    [
        ("prompt is too long: 208310 tokens > 200000 maximum", (208310, 200000)),
        (
            "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again",
            (197000, 200000),
        ),
    ],
)
def test_anthropic_prompt_is_too_long(
    anthropic_server: AnthropicServer, message: str, figures: tuple[int, int]
) -> None:
    anthropic_server.add(anthropic_error(400, message, kind="invalid_request_error"))

    error = run_one(anthropic(anthropic_server), ASK).error

    assert isinstance(error, ContextOverflowError)
    assert (error.prompt_tokens, error.context_window) == figures
    assert message in str(error)


def test_other_anthropic_400s_stay_plain(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(
        anthropic_error(400, "messages: roles must alternate", kind="invalid_request_error")
    )

    error = run_one(anthropic(anthropic_server), ASK).error

    assert type(error) is ProviderError
