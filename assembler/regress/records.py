"""What a replay compares, made the same way from a session (converting) and from a
request (replaying): the text of a message, a tool schema's parts, a prompt.

Both sides go through one function each here, so a difference found is a difference
in the agent, never in how the two sides were written down.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolResultMessage,
    ToolSchema,
)
from assembler.regress.expected import MessageRecord, PromptRecord, SectionRecord, ToolRecord
from assembler.regress.texts import TextRecord

Normalize = Callable[[str], str]


def message_role(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        return "assistant"
    if isinstance(message, ToolResultMessage):
        return "tool"
    if isinstance(message, ContextMessage):
        return "context"
    return "user"


def message_text(message: Message) -> str:
    """The text of a message as compared: the content, or for an assistant message its
    text and calls (ids, names, arguments; not the model's raw argument text, which a
    replay writes out anew)."""
    if isinstance(message, AssistantMessage):
        calls = [
            {"id": c.id, "name": c.name, "arguments": None if c.arguments is None else dict(c.arguments)}
            for c in message.tool_calls
        ]  # fmt: skip
        return json.dumps(
            {"text": message.text, "tool_calls": calls}, ensure_ascii=False, sort_keys=True
        )
    return message.content


def message_record(
    message: Message, normalize: Normalize, calls: Mapping[str, tuple[int, str]]
) -> MessageRecord:
    """`calls`: a call id's number in the session and the workspace file it named."""
    text = TextRecord.of(normalize(message_text(message)))
    if isinstance(message, ToolResultMessage):
        number, path = calls.get(message.tool_call_id, (0, ""))
        return MessageRecord(
            "tool",
            text,
            name=message.name,
            call=number,
            call_id=message.tool_call_id,
            path=path,
            is_error=message.is_error,
        )
    return MessageRecord(message_role(message), text)


def schema_texts(description: str, parameters: Any) -> tuple[str, str]:
    """A tool schema's description and its parameters as canonical JSON text."""
    return description, json.dumps(parameters, ensure_ascii=False, sort_keys=True, indent=1)


def tool_record(name: str, description: str, parameters: Any, normalize: Normalize) -> ToolRecord:
    described, params = schema_texts(description, parameters)
    return ToolRecord(name, TextRecord.of(normalize(described)), TextRecord.of(normalize(params)))


def prompt_record(payload: Mapping[str, Any], normalize: Normalize) -> PromptRecord:
    """A session's `prompt` entry (docs/sessions.md) as the replay compares it."""
    sections = tuple(
        SectionRecord(str(s.get("name", "")), TextRecord.of(normalize(str(s.get("text", "")))))
        for s in payload.get("sections", ())
        if isinstance(s, Mapping)
    )
    tools = tuple(
        tool_record(str(t.get("name", "")), str(t.get("description", "")), t.get("parameters"), normalize)
        for t in payload.get("tools", ())
        if isinstance(t, Mapping)
    )  # fmt: skip
    settings = payload.get("settings")
    return PromptRecord(sections, tools, dict(settings) if isinstance(settings, Mapping) else None)


def request_tools(tools: Sequence[ToolSchema]) -> dict[str, tuple[str, str]]:
    """The schemas a request carries: name -> (description, parameters JSON)."""
    return {tool.name: schema_texts(tool.description, tool.parameters) for tool in tools}


def call_path(arguments: Mapping[str, Any] | None) -> str:
    """The workspace file a call names (`path`), if any."""
    path = (arguments or {}).get("path")
    return path if isinstance(path, str) else ""
