"""The conversation a session continues with: its branch, compactions applied, and
every tool call answered.

Resuming must send the provider exactly what it was sent before (so its prompt cache
still hits), and a valid transcript even when the run stopped mid-tool (a `kill -9`,
Ctrl-C): OpenAI and Anthropic both reject an assistant tool call without its result.

A `compaction` entry replaces everything before the entry it names as the first one
kept (`first_kept`) with one summary message; the entries from `first_kept` on stay
verbatim. The summary is a user-role message, so no provider needs to know about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assembler.errors import SessionError
from assembler.messages import AssistantMessage, Message, ToolResultMessage
from assembler.runner.compaction import summary_message
from assembler.sessions.codec import message_from_dict
from assembler.sessions.records import Entry

INTERRUPTED = "interrupted: the run stopped before this tool finished"
"""The result a resumed session gives a tool call whose result was never recorded."""


@dataclass(frozen=True)
class Context:
    """Messages to send, each with the id of the entry it came from (the compaction
    entry for the summary), and the tool calls that needed a synthesized result."""

    messages: tuple[Message, ...]
    entry_ids: tuple[str, ...]
    repaired: tuple[str, ...] = ()


def build_context(branch: Sequence[Entry], session_id: str = "") -> Context:
    """The conversation along `branch` (root first), as the next request carries it."""
    messages: list[Message] = []
    ids: list[str] = []
    for entry in branch:
        if entry.type == "message":
            try:
                messages.append(message_from_dict(entry.payload.get("message")))
            except SessionError as exc:
                raise SessionError(f"session {session_id}, entry {entry.id}: {exc}") from exc
            ids.append(entry.id)
        elif entry.type == "compaction":
            summary = entry.payload.get("summary")
            first_kept = entry.payload.get("first_kept")
            if not isinstance(summary, str):
                raise SessionError(
                    f"session {session_id}, entry {entry.id}: a compaction without a summary"
                )
            start = ids.index(first_kept) if first_kept in ids else len(ids)
            messages = [summary_message(summary), *messages[start:]]
            ids = [entry.id, *ids[start:]]
    repaired_messages, repaired_ids, repaired = answer_dangling_calls(messages, ids)
    return Context(tuple(repaired_messages), tuple(repaired_ids), tuple(repaired))


def answer_dangling_calls(
    messages: Sequence[Message], ids: Sequence[str]
) -> tuple[list[Message], list[str], list[str]]:
    """Give every tool call without a result an "interrupted" error result, placed
    right after the results its message did get. Returns the new messages, their
    entry ids ("" for a synthesized one) and the ids of the calls answered."""
    out: list[Message] = []
    out_ids: list[str] = []
    repaired: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        out.append(message)
        out_ids.append(ids[index])
        index += 1
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        answered: set[str] = set()
        while index < len(messages) and isinstance(messages[index], ToolResultMessage):
            result = messages[index]
            assert isinstance(result, ToolResultMessage)
            answered.add(result.tool_call_id)
            out.append(result)
            out_ids.append(ids[index])
            index += 1
        for call in message.tool_calls:
            if call.id not in answered:
                out.append(ToolResultMessage(call.id, call.name, INTERRUPTED, is_error=True))
                out_ids.append("")
                repaired.append(call.id)
    return out, out_ids, repaired
