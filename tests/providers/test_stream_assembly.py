"""How streamed tool-call deltas become calls, on shapes real servers send."""

from __future__ import annotations

import pytest
from wire.drive import run_one
from wire.openai_server import DONE, OpenAIServer, StreamReply, delta_frame

from assembler.messages import ModelRequest, UserMessage
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.text import json_type_name

ASK = ModelRequest("m", "system", (UserMessage("hi"),))


def tool_delta(index: int, call_id: str | None, name: str | None, arguments: str) -> bytes:
    function = {"arguments": arguments} | ({"name": name} if name is not None else {})
    call = {"index": index, "function": function} | ({"id": call_id} if call_id else {})
    return delta_frame({"tool_calls": [call]})


def calls(server: OpenAIServer, *frames: bytes) -> list[tuple[str, str, object]]:
    server.add(StreamReply((*frames, delta_frame({}, "tool_calls"), DONE)))
    done = run_one(
        lambda: OpenAIChatProvider("m", api_key="k", base_url=server.base_url, max_retries=0), ASK
    ).done
    return [(c.id, c.name, c.arguments) for c in done.message.tool_calls]


def test_a_new_id_at_a_used_index_starts_another_call(openai_server: OpenAIServer) -> None:
    assert calls(
        openai_server,
        tool_delta(0, "call_a", "ls", '{"path": "."}'),
        tool_delta(0, "call_b", "read", '{"path": "a.txt"}'),
    ) == [("call_a", "ls", {"path": "."}), ("call_b", "read", {"path": "a.txt"})]


def test_the_same_id_repeated_continues_the_call(openai_server: OpenAIServer) -> None:
    assert calls(
        openai_server,
        tool_delta(0, "call_a", "ls", '{"pa'),
        tool_delta(0, "call_a", "ls", 'th": "src"}'),
    ) == [("call_a", "ls", {"path": "src"})]


def test_a_legacy_function_call_alone_is_one_call(openai_server: OpenAIServer) -> None:
    frames = [
        delta_frame({"function_call": {"name": "ls", "arguments": piece}})
        for piece in ('{"path"', ': "."}', "")
    ]
    ((call_id, name, arguments),) = calls(openai_server, *frames)
    assert (name, arguments) == ("ls", {"path": "."})
    assert call_id.startswith("call_")  # the server gave none: one is made up


def test_a_legacy_function_call_beside_tool_calls_is_not_counted_twice(
    openai_server: OpenAIServer,
) -> None:
    both = [
        delta_frame(
            {
                "function_call": {"name": "ls", "arguments": piece},
                "tool_calls": [
                    {"index": 0, "id": "c1", "function": {"name": "ls", "arguments": piece}}
                ],
            }
        )
        for piece in ('{"path"', ': "."}')
    ]
    assert calls(openai_server, *both) == [("c1", "ls", {"path": "."})]


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ({}, "an object"),
        ([], "an array"),
        ("x", "a string"),
        (1, "a number"),
        (1.5, "a number"),
        (True, "a boolean"),
        (None, "null"),
        (b"x", "bytes"),
    ],
)
def test_json_type_name(value: object, name: str) -> None:
    assert json_type_name(value) == name
