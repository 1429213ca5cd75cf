"""How new memories are made: the `remember` tool, and extraction at session end.

Both paths validate exactly like any other record (`validate_record`), so a record the
model invents is held to the same slug, type, one-line description and size cap as one
a person writes. A bad record is refused with a message the model (or the user, for
extraction) can act on; it is never stored half-right.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from assembler.errors import MemoryStoreError
from assembler.manifest.model import MemoryPolicy
from assembler.memory._model import ask_model, describe_error, parse_json_answer, preview
from assembler.memory.records import (
    MAX_DESCRIPTION_LENGTH,
    NAME_PATTERN,
    RECORD_TYPES,
    MemoryRecord,
    validate_record,
)
from assembler.memory.store import MemoryStore
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)
from assembler.providers.base import ModelProvider
from assembler.tools.base import Tool, ToolContext, ToolResult

REMEMBER_TOOL_NAME: Final = "remember"
_TYPES_HELP: Final = (
    "user (who the user is, their preferences), feedback (how the user wants you to "
    "work), project (facts and decisions about this project), reference (where to "
    "find things)"
)


def remember_parameters(max_body_bytes: int) -> dict[str, Any]:
    """The `remember` tool's JSON Schema; the same limits `validate_record` enforces."""
    return {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "pattern": NAME_PATTERN,
                "description": "Short slug (lowercase letters, digits, hyphens). "
                "Reusing an existing name replaces that memory.",
            },
            "description": {
                "type": "string",
                "maxLength": MAX_DESCRIPTION_LENGTH,
                "description": "One line saying what the memory is about; used to find it.",
            },
            "type": {"type": "string", "enum": list(RECORD_TYPES), "description": _TYPES_HELP},
            "body": {
                "type": "string",
                "description": f"The memory itself (Markdown, at most {max_body_bytes} bytes).",
            },
        },
        "required": ["name", "description", "type", "body"],
        "additionalProperties": False,
    }


def make_remember_tool(store: MemoryStore, policy: MemoryPolicy | None = None) -> Tool:
    """The `remember` tool: create or replace (by name) one record in `store`.

    Errors come back as error results for the model to correct, never as exceptions
    that would end the run.
    """
    limit = policy.record_max_bytes if policy is not None else store.max_body_bytes

    async def remember(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            record = validate_record(args, max_body_bytes=limit)
            created = store.upsert(record)
        except MemoryStoreError as e:
            return ToolResult(f"remember: {e}", is_error=True)
        verb = "saved" if created else "updated (it replaced the memory with this name)"
        return ToolResult(
            f"Memory {record.name!r} {verb}.",
            details={
                "name": record.name,
                "created": created,
                "path": str(store.path / f"{record.name}.md"),
            },
        )

    return Tool(
        name=REMEMBER_TOOL_NAME,
        description=(
            "Save a memory that will be available in later sessions: a fact about the user, "
            "feedback on how to work, a project fact or decision, or a reference."
        ),
        parameters=remember_parameters(limit),
        execute=remember,
        snippet="save a memory for later sessions",
        guidelines=(
            "Use `remember` for durable facts worth knowing in a later session, not for "
            "what the code or its history already records; update a memory by reusing its name.",
        ),
        source="memory",
    )


EXTRACTION_SYSTEM: Final = (
    "You read a finished conversation between a user and an AI agent and decide what is "
    "worth remembering in later sessions: who the user is and their preferences, "
    "feedback on how the agent should work, facts and decisions about the project, "
    "references to where things are. Skip what is temporary or already in the code.\n"
    "Answer with only a JSON list of records, each an object "
    '{"name": "<slug of lowercase letters, digits, hyphens>", "description": "<one line>", '
    '"type": "user" | "feedback" | "project" | "reference", "body": "<the memory>"}. '
    "Reuse an existing memory's name to replace it. Answer [] when nothing is worth keeping."
)


@dataclass(frozen=True)
class ExtractionResult:
    """The records written (by name) and the ones refused, with why."""

    names: tuple[str, ...] = ()
    diagnostics: tuple[str, ...] = ()


async def extract_memories(
    provider: ModelProvider,
    messages: Sequence[Message],
    store: MemoryStore,
    policy: MemoryPolicy,
    *,
    model: str = "",
    max_transcript_chars: int = 40_000,
    max_catalog_chars: int = 8_000,
) -> ExtractionResult:
    """Ask the model once for records worth keeping from `messages` and store the valid
    ones. Never raises for the model's mistakes or a provider failure: those become
    diagnostics and nothing is stored."""
    transcript = render_transcript(messages, max_transcript_chars)
    if not transcript:
        return ExtractionResult()
    catalog = _catalog(store, max_catalog_chars)
    prompt = f"Existing memories:\n{catalog}\n\nThe conversation:\n{transcript}"
    try:
        answer = await ask_model(provider, system=EXTRACTION_SYSTEM, prompt=prompt, model=model)
    except Exception as e:  # a failed side request must not fail the session's end
        return ExtractionResult(
            diagnostics=(f"memory extraction: the model request failed ({describe_error(e)})",)
        )
    try:
        value = parse_json_answer(answer)
    except ValueError as e:
        return ExtractionResult(diagnostics=(f"memory extraction: invalid answer: {e}",))
    if isinstance(value, dict) and set(value) == {"records"}:
        value = value["records"]
    if not isinstance(value, list):
        return ExtractionResult(
            diagnostics=(
                f"memory extraction: expected a JSON list of records, got {preview(answer)}",
            )
        )
    records: dict[str, MemoryRecord] = {}
    diagnostics: list[str] = []
    for number, item in enumerate(value, start=1):
        try:
            record = validate_record(item, max_body_bytes=policy.record_max_bytes)
        except MemoryStoreError as e:
            diagnostics.append(f"memory extraction: record {number}: {e}; not stored")
            continue
        if record.name in records:
            diagnostics.append(
                f"memory extraction: record {number}: {record.name!r} appears twice; not stored"
            )
            continue
        records[record.name] = record
    if not records:
        return ExtractionResult(diagnostics=tuple(diagnostics))
    try:
        store.upsert_many(records.values())
    except MemoryStoreError as e:
        return ExtractionResult(
            diagnostics=(*diagnostics, f"memory extraction: {e}; nothing stored")
        )
    return ExtractionResult(tuple(records), tuple(diagnostics))


def render_transcript(messages: Sequence[Message], max_chars: int) -> str:
    """The conversation as plain text, its most recent `max_chars` kept.

    Context messages are left out: in `message` mode they hold the memories selected
    for the turn, and extracting them again would only duplicate the store.
    """
    parts: list[str] = []
    has_user = False
    for message in messages:
        if isinstance(message, UserMessage):
            has_user = True
            parts.append(f"User: {message.content}")
        elif isinstance(message, AssistantMessage):
            if message.text:
                parts.append(f"Assistant: {message.text}")
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
                parts.append(f"Assistant called {call.name}: {_clip(arguments, 1000)}")
        elif isinstance(message, ToolResultMessage):
            status = " (error)" if message.is_error else ""
            parts.append(f"Result of {message.name}{status}: {_clip(message.content, 2000)}")
        elif isinstance(message, ContextMessage):
            continue
    if not has_user:
        return ""
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        text = "[earlier conversation omitted]\n" + text[-max_chars:]
    return text


def _catalog(store: MemoryStore, max_chars: int) -> str:
    lines: list[str] = []
    used = 0
    for entry in store.iter_catalog():
        line = f"- {entry.name} ({entry.type}): {entry.description}"
        used += len(line) + 1
        if used > max_chars:
            lines.append(f"- ... and {len(store) - len(lines)} more")
            break
        lines.append(line)
    return "\n".join(lines) or "(none)"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
