"""A typed answer (`ModelRequest.output`) on each provider's wire.

OpenAI: strict `response_format` where the schema has a strict form (the `final_answer`
tool is then not offered and the reply's text is the answer); on a compatible server
only when the answer is all there is to do; a server that refuses the field gets the
request again with the tool, and never the field again. Anthropic: the tool, forced by
`tool_choice` when the runner forces it.
"""

from __future__ import annotations

import json
from typing import Any

from wire.anthropic_server import AnthropicServer, ToolUseSpec
from wire.anthropic_server import stream as anthropic_stream
from wire.drive import run, run_one
from wire.openai_server import OpenAIServer
from wire.openai_server import stream as openai_stream
from wire.structured import LlamaServerBefore, StrictOpenAIServer

from assembler.messages import (
    ForcedTool,
    ModelRequest,
    ModelSettings,
    ToolSchema,
    UserMessage,
)
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.typed.output import OutputContract

TRIAGE = {
    "type": "object",
    "required": ["labels", "priority"],
    "properties": {
        "labels": {"type": "array", "items": {"type": "string"}},
        "priority": {"enum": ["p0", "p1", "p2", "p3"]},
        "note": {"type": "string", "default": ""},
    },
}
LS = ToolSchema("ls", "List files.", {"type": "object", "properties": {}})


def ask(
    contract: OutputContract, *, tools: tuple[ToolSchema, ...] = (), force: bool = False
) -> ModelRequest:
    """A request as the runner makes it for a typed run."""
    choice = ForcedTool(contract.tool) if force else None
    return ModelRequest(
        "m",
        "system",
        (UserMessage("triage it"),),
        tools=(*tools, contract.tool_schema()),
        settings=ModelSettings(tool_choice=choice),
        output=contract.request(),
    )


def openai(server: OpenAIServer, *, official: bool = False) -> OpenAIChatProvider:
    provider = OpenAIChatProvider("m", api_key="k", base_url=server.base_url)
    provider._official = official  # as for api.openai.com (the loopback's host is not)
    return provider


ANSWER = {"labels": ["bug"], "priority": "p1", "note": ""}


def test_openai_asks_for_strict_structured_output_and_reads_the_text() -> None:
    contract = OutputContract(TRIAGE)
    with StrictOpenAIServer() as server:
        server.add(openai_stream(json.dumps(ANSWER)))
        outcome = run_one(
            lambda: openai(server, official=True), ask(contract, tools=(LS,), force=True)
        )
        body = server.bodies[0]
    done = outcome.done
    assert (done.output_via, json.loads(done.message.text)) == ("native", ANSWER)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "final_answer",
            "schema": {
                "type": "object",
                "properties": {
                    "labels": {"type": "array", "items": {"type": "string"}},
                    "priority": {"enum": ["p0", "p1", "p2", "p3"]},
                    "note": {"type": "string"},
                },
                "required": ["labels", "priority", "note"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    # api.openai.com takes tools and structured output together; the answer's tool
    # is not offered, and a choice forcing it is not sent
    assert [t["function"]["name"] for t in body["tools"]] == ["ls"]
    assert "tool_choice" not in body


def test_a_compatible_server_gets_the_format_only_when_answering_is_all_there_is() -> None:
    contract = OutputContract(TRIAGE)
    with OpenAIServer() as server:
        server.add(openai_stream(json.dumps(ANSWER)), openai_stream("working"))
        alone, with_tools = run(
            lambda: openai(server), ask(contract, force=True), ask(contract, tools=(LS,))
        )
        first, second = server.bodies
    assert alone.done.output_via == "native"
    assert first["response_format"]["json_schema"]["strict"] is True
    assert "tools" not in first and "tool_choice" not in first
    # with a tool to call, a grammar over the whole reply would forbid calling it
    assert with_tools.done.output_via == "tool"
    assert "response_format" not in second
    assert [t["function"]["name"] for t in second["tools"]] == ["ls", "final_answer"]
    assert second["tools"][1]["function"]["parameters"] == TRIAGE


def test_a_schema_strict_mode_cannot_take_goes_as_the_tool() -> None:
    contract = OutputContract(
        {"type": "object", "properties": {"title": {"type": "string", "maxLength": 80}}}
    )
    assert contract.strict_schema is None
    with StrictOpenAIServer() as server:
        server.add(openai_stream(tool_calls=[]))
        outcome = run_one(lambda: openai(server, official=True), ask(contract, force=True))
        body = server.bodies[0]
    assert outcome.done.output_via == "tool"
    assert "response_format" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "final_answer"}}


def test_the_strict_form_passes_the_apis_own_checks() -> None:
    """The loopback server refuses what the API refuses; the strict form of a nested
    schema with optional properties, `$defs` and annotations gets through."""
    nested = {
        "type": "object",
        "description": "A triage.",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
            "when": {"type": "string", "format": "date"},
        },
        "$defs": {
            "item": {
                "type": "object",
                "title": "Item",
                "properties": {
                    "name": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0},
                },
                "examples": [{"name": "a", "count": 1}],
            }
        },
    }
    contract = OutputContract(nested)
    with StrictOpenAIServer() as server:
        server.add(openai_stream("{}"))
        outcome = run_one(lambda: openai(server, official=True), ask(contract))
        sent = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert outcome.error is None
    assert sent["$defs"]["item"]["required"] == ["name", "count"]
    assert "title" not in sent["$defs"]["item"] and "examples" not in sent["$defs"]["item"]


def test_the_wire_check_refuses_a_schema_as_written() -> None:
    from wire.structured import response_format_error

    body = {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": TRIAGE, "strict": True},
        }
    }
    refused = response_format_error(body)
    assert refused is not None and refused.status == 400
    assert refused.body["error"]["message"] == (
        "Invalid schema for response_format 'final_answer': In context=(), "
        "'additionalProperties' is required to be supplied and to be false."
    )


def test_a_server_that_refuses_the_format_gets_the_tool_from_then_on() -> None:
    contract = OutputContract(TRIAGE)
    call = {"labels": ["ui"], "priority": "p2", "note": "n"}
    from wire.openai_server import ToolCallSpec

    with LlamaServerBefore() as server:
        server.add(
            openai_stream(tool_calls=[ToolCallSpec("c1", "final_answer", [json.dumps(call)])]),
            openai_stream("still working"),
        )
        first, second = run(
            lambda: openai(server), ask(contract, force=True), ask(contract, force=True)
        )
        bodies = server.bodies
        statuses = len(server.requests)
    assert first.done.output_via == "tool"
    assert json.loads(first.done.message.tool_calls[0].raw_arguments) == call
    assert second.done.output_via == "tool"
    # refused once (400), asked again with the tool, and never with the field again
    assert statuses == 3
    assert "response_format" in bodies[0]
    assert "response_format" not in bodies[1] and "response_format" not in bodies[2]
    assert bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "final_answer"}}


def test_anthropic_gets_the_tool_forced() -> None:
    contract = OutputContract(TRIAGE)
    with AnthropicServer() as server:
        server.add(
            anthropic_stream(tool_uses=[ToolUseSpec("tu_1", "final_answer", [json.dumps(ANSWER)])])
        )
        outcome = run_one(
            lambda: AnthropicProvider("m", api_key="k", base_url=server.base_url),
            ask(contract, force=True),
        )
        body: dict[str, Any] = server.bodies[0]
    assert body["tool_choice"] == {"type": "tool", "name": "final_answer"}
    # the last tool carries the tools' prompt-cache breakpoint (issue 23)
    assert body["tools"] == [
        {
            "name": "final_answer",
            "description": contract.description,
            "input_schema": TRIAGE,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert "output_config" not in body
    (call,) = outcome.done.message.tool_calls
    assert (call.name, call.arguments) == ("final_answer", ANSWER)
