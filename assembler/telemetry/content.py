"""Messages in the GenAI conventions' JSON shapes, for the opt-in content attributes.

`gen_ai.input.messages`, `gen_ai.output.messages` and `gen_ai.system_instructions`
follow the conventions' JSON schemas (`{"role", "parts": [{"type", ...}]}`) and are
recorded as JSON strings, which every SDK version and exporter accepts. Only built
when the user asks for content (`telemetry.state.content_wanted`): prompts and tool
output can hold anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)


def to_json(value: Any) -> str:
    """Compact JSON, non-ASCII kept, anything unexpected shown with `str`."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def system_instructions(system: str) -> str:
    return to_json([{"type": "text", "content": system}])


def input_messages(messages: Iterable[Message]) -> str:
    return to_json([_message(m) for m in messages])


def output_messages(message: AssistantMessage, finish_reason: str) -> str:
    out = _message(message)
    out["finish_reason"] = finish_reason or "stop"
    return to_json([out])


def text_messages(role: str, text: str) -> str:
    """One message of plain text: a run's prompt, or its final answer."""
    return to_json([{"role": role, "parts": [{"type": "text", "content": text}]}])


def arguments_json(value: Mapping[str, Any] | None, raw: str) -> str:
    return to_json(dict(value)) if value is not None else raw


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage | ContextMessage):  # context goes as a user turn
        return {"role": "user", "parts": [{"type": "text", "content": message.content}]}
    if isinstance(message, ToolResultMessage):
        part = {"type": "tool_call_response", "id": message.tool_call_id}
        return {"role": "tool", "parts": [{**part, "response": message.content}]}
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "content": message.text})
    for call in message.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": dict(call.arguments)
                if call.arguments is not None
                else call.raw_arguments,
            }
        )
    return {"role": "assistant", "parts": parts}
