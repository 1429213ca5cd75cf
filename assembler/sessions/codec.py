"""Messages to and from plain JSON objects, for session files.

A session file outlives the process that wrote it and may be read by a later version
of agent-assembler, so the on-disk form is spelled out here field by field instead of
using `dataclasses.asdict`: renaming a dataclass field must not silently change the
file format. Decoding is strict: a record with an unknown `role`, a missing field or
a field of the wrong type raises `SessionError` naming the problem, because guessing
would put a made-up turn into a conversation the model is shown again on resume.

The round trip is exact, including a `ToolCall` whose arguments were not a JSON
object (`arguments` None, the model's `raw_arguments` and the `arguments_error`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assembler.errors import SessionError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    Reasoning,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from assembler.text import json_type_name


def message_to_dict(msg: Message) -> dict[str, Any]:
    """The JSON object stored for one message; `role` says which type it is."""
    if isinstance(msg, AssistantMessage):
        data: dict[str, Any] = {
            "role": "assistant",
            "text": msg.text,
            "tool_calls": [tool_call_to_dict(call) for call in msg.tool_calls],
        }
        if msg.reasoning:
            data["reasoning"] = [reasoning_to_dict(block) for block in msg.reasoning]
        return data
    if isinstance(msg, ToolResultMessage):
        return {
            "role": "tool",
            "tool_call_id": msg.tool_call_id,
            "name": msg.name,
            "content": msg.content,
            "is_error": msg.is_error,
        }
    if isinstance(msg, ContextMessage):
        return {"role": "context", "content": msg.content}
    if isinstance(msg, UserMessage):
        return {"role": "user", "content": msg.content}
    raise SessionError(f"cannot store a message of type {type(msg).__name__}")


def message_from_dict(data: object) -> Message:
    """The message stored by `message_to_dict`; `SessionError` if the record is malformed."""
    if not isinstance(data, Mapping):
        raise SessionError(f"a message record must be a JSON object, not {json_type_name(data)}")
    role = data.get("role")
    if role == "user":
        return UserMessage(content=_str(data, "content", "user message"))
    if role == "context":
        return ContextMessage(content=_str(data, "content", "context message"))
    if role == "assistant":
        calls = data.get("tool_calls", [])
        if not isinstance(calls, list):
            raise SessionError(
                f"assistant message: 'tool_calls' must be a list, not {json_type_name(calls)}"
            )
        reasoning = data.get("reasoning", [])
        if not isinstance(reasoning, list):
            raise SessionError(
                f"assistant message: 'reasoning' must be a list, not {json_type_name(reasoning)}"
            )
        return AssistantMessage(
            text=_str(data, "text", "assistant message", default=""),
            tool_calls=tuple(tool_call_from_dict(call) for call in calls),
            reasoning=tuple(reasoning_from_dict(block) for block in reasoning),
        )
    if role == "tool":
        is_error = data.get("is_error", False)
        if not isinstance(is_error, bool):
            raise SessionError(
                f"tool result: 'is_error' must be a boolean, not {json_type_name(is_error)}"
            )
        return ToolResultMessage(
            tool_call_id=_str(data, "tool_call_id", "tool result"),
            name=_str(data, "name", "tool result"),
            content=_str(data, "content", "tool result"),
            is_error=is_error,
        )
    if role is None:
        raise SessionError("a message record has no 'role'")
    raise SessionError(f"unknown message role {role!r} (expected user, context, assistant or tool)")


def tool_call_to_dict(call: ToolCall) -> dict[str, Any]:
    """One tool call; `arguments` is null when the model sent something unparseable."""
    return {
        "id": call.id,
        "name": call.name,
        "arguments": None if call.arguments is None else dict(call.arguments),
        "raw_arguments": call.raw_arguments,
        "arguments_error": call.arguments_error,
    }


def tool_call_from_dict(data: Any) -> ToolCall:
    """The tool call stored by `tool_call_to_dict`."""
    if not isinstance(data, Mapping):
        raise SessionError(f"a tool call record must be a JSON object, not {json_type_name(data)}")
    arguments = data.get("arguments")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise SessionError(
            f"tool call: 'arguments' must be a JSON object or null, not {json_type_name(arguments)}"
        )
    return ToolCall(
        id=_str(data, "id", "tool call"),
        name=_str(data, "name", "tool call"),
        arguments=None if arguments is None else dict(arguments),
        raw_arguments=_str(data, "raw_arguments", "tool call", default=""),
        arguments_error=_str(data, "arguments_error", "tool call", default=""),
    )


_REASONING_KINDS = ("thinking", "redacted_thinking", "text")


def reasoning_to_dict(block: Reasoning) -> dict[str, Any]:
    """One block of reasoning, byte for byte as the provider sent it (a thinking
    block's `signature` must come back unchanged), empty fields left out."""
    data: dict[str, Any] = {"kind": block.kind}
    for key in ("text", "signature", "data"):
        value = getattr(block, key)
        if value:
            data[key] = value
    return data


def reasoning_from_dict(data: Any) -> Reasoning:
    """The reasoning block stored by `reasoning_to_dict`."""
    if not isinstance(data, Mapping):
        raise SessionError(f"a reasoning record must be a JSON object, not {json_type_name(data)}")
    kind = data.get("kind")
    if kind not in _REASONING_KINDS:
        raise SessionError(
            f"reasoning: unknown kind {kind!r} (expected thinking, redacted_thinking or text)"
        )
    return Reasoning(
        kind=kind,
        text=_str(data, "text", "reasoning", default=""),
        signature=_str(data, "signature", "reasoning", default=""),
        data=_str(data, "data", "reasoning", default=""),
    )


USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def usage_to_dict(usage: Usage) -> dict[str, int]:
    """Token counts of one response, as stored next to the assistant message (and in
    events); cache counts only when there are some."""
    data = usage.to_dict()
    if not (usage.cache_read_tokens or usage.cache_write_tokens):
        del data["cache_read_tokens"], data["cache_write_tokens"]
    return data


def usage_from_dict(data: Any) -> Usage:
    """The usage stored by `usage_to_dict`; missing counts are 0."""
    if not isinstance(data, Mapping):
        raise SessionError(f"a usage record must be a JSON object, not {json_type_name(data)}")
    counts: list[int] = []
    for key in USAGE_KEYS:
        value = data.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SessionError(f"usage: {key!r} must be a non-negative integer, not {value!r}")
        counts.append(value)
    return Usage(*counts)


_MISSING: Any = object()


def _str(data: Mapping[str, Any], key: str, what: str, default: str = _MISSING) -> str:
    value = data.get(key, default)
    if value is _MISSING:
        raise SessionError(f"{what}: the field {key!r} is missing")
    if not isinstance(value, str):
        raise SessionError(f"{what}: {key!r} must be a string, not {json_type_name(value)}")
    return value
