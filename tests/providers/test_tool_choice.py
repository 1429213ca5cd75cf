"""`model.tool_choice`: from the manifest to each provider's wire, and when it applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wire.anthropic_server import AnthropicServer
from wire.anthropic_server import stream as anthropic_stream
from wire.drive import run_one
from wire.openai_server import OpenAIServer
from wire.openai_server import stream as openai_stream

from assembler import load_manifest
from assembler.agent.model_choice import choose_model
from assembler.errors import ManifestError, ProviderError
from assembler.messages import (
    AssistantMessage,
    ForcedTool,
    ModelRequest,
    ModelSettings,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.validation.validator import validate_file

LS = ToolSchema("ls", "List files.", {"type": "object", "properties": {}})
READ = ToolSchema("read", "Read a file.", {"type": "object", "properties": {}})


def ask(choice: ToolChoice | None, *messages: Any, tools: Any = (LS, READ)) -> ModelRequest:
    return ModelRequest(
        "m",
        "system",
        messages or (UserMessage("go"),),
        tools=tools,
        settings=ModelSettings(tool_choice=choice),
    )


def openai_body(server: OpenAIServer, request: ModelRequest, **kw: Any) -> dict[str, Any]:
    server.add(openai_stream("ok"))
    outcome = run_one(
        lambda: OpenAIChatProvider("m", api_key="k", base_url=server.base_url, **kw), request
    )
    assert outcome.error is None, outcome.error
    body: dict[str, Any] = server.bodies[-1]
    return body


def anthropic_body(server: AnthropicServer, request: ModelRequest) -> dict[str, Any]:
    server.add(anthropic_stream("ok"))
    outcome = run_one(
        lambda: AnthropicProvider("m", api_key="k", base_url=server.base_url), request
    )
    assert outcome.error is None, outcome.error
    body: dict[str, Any] = server.bodies[-1]
    return body


CASES = [
    ("auto", "auto", {"type": "auto"}),
    ("required", "required", {"type": "any"}),
    ("none", "none", {"type": "none"}),
    (
        ForcedTool("read"),
        {"type": "function", "function": {"name": "read"}},
        {"type": "tool", "name": "read"},
    ),
]


@pytest.mark.parametrize(("choice", "openai_wire", "anthropic_wire"), CASES)
def test_each_choice_on_each_wire(
    openai_server: OpenAIServer,
    anthropic_server: AnthropicServer,
    choice: ToolChoice,
    openai_wire: Any,
    anthropic_wire: Any,
) -> None:
    assert openai_body(openai_server, ask(choice))["tool_choice"] == openai_wire
    assert anthropic_body(anthropic_server, ask(choice))["tool_choice"] == anthropic_wire


def test_unset_sends_nothing(
    openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    assert "tool_choice" not in openai_body(openai_server, ask(None))
    assert "tool_choice" not in anthropic_body(anthropic_server, ask(None))


def test_nothing_is_sent_without_tools(openai_server: OpenAIServer) -> None:
    """OpenAI refuses `tool_choice` in a request that offers no tools."""
    assert "tool_choice" not in openai_body(openai_server, ask("required", tools=()))


def test_the_manifest_setting_is_the_default_and_the_request_wins(
    openai_server: OpenAIServer,
) -> None:
    manifest_default = ModelSettings(tool_choice="none")
    body = openai_body(openai_server, ask(None), settings=manifest_default)
    assert body["tool_choice"] == "none"
    body = openai_body(openai_server, ask("required"), settings=manifest_default)
    assert body["tool_choice"] == "required"


AFTER_A_TOOL = (
    UserMessage("go"),
    AssistantMessage(tool_calls=(ToolCall("c1", "ls", {}),)),
    ToolResultMessage("c1", "ls", "a.txt"),
)


@pytest.mark.parametrize("choice", ["required", ForcedTool("ls")])
def test_a_forcing_choice_is_dropped_once_the_model_called_a_tool(
    openai_server: OpenAIServer, anthropic_server: AnthropicServer, choice: ToolChoice
) -> None:
    assert "tool_choice" not in openai_body(openai_server, ask(choice, *AFTER_A_TOOL))
    assert "tool_choice" not in anthropic_body(anthropic_server, ask(choice, *AFTER_A_TOOL))


def test_a_new_user_message_forces_again(openai_server: OpenAIServer) -> None:
    later = (*AFTER_A_TOOL, AssistantMessage("a.txt"), UserMessage("again"))
    assert openai_body(openai_server, ask("required", *later))["tool_choice"] == "required"


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_auto_and_none_hold_for_every_request(
    openai_server: OpenAIServer, choice: ToolChoice
) -> None:
    assert openai_body(openai_server, ask(choice, *AFTER_A_TOOL))["tool_choice"] == choice


def test_a_forced_tool_the_agent_lacks_is_a_clear_error(openai_server: OpenAIServer) -> None:
    outcome = run_one(
        lambda: OpenAIChatProvider("m", api_key="k", base_url=openai_server.base_url),
        ask(ForcedTool("deploy")),
    )

    assert isinstance(outcome.error, ProviderError)
    assert str(outcome.error) == (
        "model.tool_choice names the tool `deploy`, which this agent does not have; "
        "its tools: ls, read"
    )
    assert openai_server.requests == []  # refused before anything was sent


# --- the manifest ------------------------------------------------------------------


def manifest(tmp_path: Path, tool_choice: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: a\nidentity: x\n"
        f"model:\n  provider: openai\n  name: gpt-4o\n  tool_choice: {tool_choice}\n"
    )
    return path


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("{tool: ls}", ForcedTool("ls")),
    ],
)
def test_manifest_tool_choice_reaches_the_settings(
    tmp_path: Path, yaml: str, expected: ToolChoice
) -> None:
    loaded = load_manifest(manifest(tmp_path, yaml))
    assert loaded.model is not None and loaded.model.tool_choice == expected
    assert choose_model(loaded).settings.tool_choice == expected


@pytest.mark.parametrize("yaml", ["sometimes", "{tool: ''}", "{name: ls}", "{tool: ls, why: x}"])
def test_manifest_tool_choice_is_validated(tmp_path: Path, yaml: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifest(manifest(tmp_path, yaml))
    assert "model.tool_choice" in str(info.value)


def test_manifest_without_tool_choice_leaves_it_to_the_server(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("version: 1\nname: a\nidentity: x\nmodel: openai:gpt-4o\n")
    assert choose_model(load_manifest(path)).settings.tool_choice is None


def warnings_of(tmp_path: Path, tool: str, extra: str = "") -> list[str]:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: a\nidentity: x\n"
        f"model:\n  provider: openai\n  name: gpt-4o\n  tool_choice: {{tool: {tool}}}\n"
        "tools:\n  sets: [readonly]\n" + extra
    )
    return [i.message for i in validate_file(path).issues if i.severity == "warning"]


def test_validate_warns_about_a_forced_tool_that_is_certainly_not_there(tmp_path: Path) -> None:
    assert warnings_of(tmp_path, "lss") == [
        "`tool_choice` names `lss`, which is not an active tool "
        "(active: `find`, `grep`, `ls`, `read`)"
    ]
    assert warnings_of(tmp_path, "ls") == []


def test_validate_stays_quiet_when_an_extension_may_add_the_tool(tmp_path: Path) -> None:
    (tmp_path / "ext.py").write_text("def setup(api, options):\n    pass\n")
    assert warnings_of(tmp_path, "deploy", "extensions: [{path: ext.py}]\n") == []
