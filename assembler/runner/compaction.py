"""Compaction: summarise the older part of a conversation, keep the recent tail verbatim.

Where to cut: always at a user message, so the recent tail starts with a user turn and
keeps everything after it; a tool call and its result are therefore never split (they
both sit after the same user message). At least the last user turn is kept; earlier
turns are kept too while the tail stays within `keep_tokens`.

What the model is asked: the older messages are written out as a plain transcript in
one user message of a separate request, with its own system prompt and no tools. A
transcript (rather than the original messages) cannot trip a provider's rules about
tool calls and results, and its size can be capped. The agent's system prompt is not
part of it: it is rebuilt every turn and stays byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ModelRequest,
    ModelSettings,
    ResponseDone,
    Usage,
    UserMessage,
)
from assembler.providers.base import ModelProvider

SUMMARY_SYSTEM_PROMPT = """\
You summarise a conversation between a user and an AI agent that uses tools, so that the \
agent can continue the work with only your summary and the most recent messages.

Write a concise, factual summary in Markdown with these parts:
## Goal
What the user asked for, in their words where it matters.
## Progress
What was done: files read or changed (with paths), commands run and their outcomes, \
decisions and their reasons.
## State
What is true now, open problems, errors seen.
## Next steps
What remains to do.

Keep exact names, paths, identifiers, numbers and error messages. Do not invent anything."""

SUMMARY_OPEN = "<conversation_summary>"
SUMMARY_CLOSE = "</conversation_summary>"


def summary_message(summary: str) -> UserMessage:
    """The message that stands for the compacted part of a conversation."""
    return UserMessage(
        "The earlier part of this conversation was summarised to fit the context window:\n"
        f"{SUMMARY_OPEN}\n{summary.strip()}\n{SUMMARY_CLOSE}"
    )


DEFAULT_KEEP_TOKENS = 20_000
"""How much of the recent conversation is kept verbatim (estimated tokens)."""

_CHARS_PER_TOKEN = 4
_RESULT_PREVIEW = 2_000


@dataclass(frozen=True)
class CompactionPlan:
    """`messages[:cut]` are summarised, `messages[cut:]` kept."""

    cut: int
    tokens_before: int


@dataclass(frozen=True)
class Summary:
    text: str
    usage: Usage


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count (4 characters a token) for choosing the cut; reported
    usage, when there is some, is what triggers compaction."""
    return sum(len(_render(message)) for message in messages) // _CHARS_PER_TOKEN


def plan_compaction(
    messages: Sequence[Message], *, keep_tokens: int = DEFAULT_KEEP_TOKENS
) -> CompactionPlan | None:
    """Where to cut, or None when there is nothing older than the last user turn.

    Earlier turns stay verbatim while the tail fits in `keep_tokens`; when the whole
    history fits, only the last turn is kept (compacting must shorten something)."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    if not starts or starts[-1] == 0:
        return None
    cut = starts[-1]
    for start in reversed(starts[:-1]):
        if start == 0 or estimate_tokens(messages[start:]) > keep_tokens:
            break
        cut = start
    return CompactionPlan(cut, estimate_tokens(messages))


def transcript(messages: Sequence[Message], *, max_chars: int | None = None) -> str:
    """The messages as readable text; past `max_chars`, the middle is left out (the
    start holds the goal and any earlier summary, the end the latest state)."""
    text = "\n\n".join(_render(message) for message in messages)
    if max_chars is None or len(text) <= max_chars:
        return text
    head = max_chars // 5
    tail = max_chars - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n\n[... {omitted} characters left out ...]\n\n{text[-tail:]}"


def _render(message: Message) -> str:
    if isinstance(message, UserMessage):
        return f"[user]\n{message.content}"
    if isinstance(message, ContextMessage):
        return f"[context]\n{message.content}"
    if isinstance(message, AssistantMessage):
        parts = [f"[assistant]\n{message.text}"] if message.text else []
        for call in message.tool_calls:
            arguments = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else "{}"
            parts.append(f"[assistant calls {call.name}] {arguments}")
        return "\n".join(parts) or "[assistant]"
    content = message.content
    if len(content) > _RESULT_PREVIEW:
        content = content[:_RESULT_PREVIEW] + f"\n[... {len(content) - _RESULT_PREVIEW} more]"
    flag = " (error)" if message.is_error else ""
    return f"[{message.name} result{flag}]\n{content}"


async def summarise(
    provider: ModelProvider,
    model: str,
    messages: Sequence[Message],
    *,
    instructions: str | None = None,
    settings: ModelSettings | None = None,
    max_chars: int | None = None,
) -> Summary:
    """Ask the model for a summary of `messages`; raises `ProviderError` if it gives none."""
    ask = (
        "Summarise this conversation so far.\n\n<conversation>\n"
        + transcript(messages, max_chars=max_chars)
        + "\n</conversation>"
    )
    if instructions and instructions.strip():
        ask += f"\n\nFocus of this summary: {instructions.strip()}"
    request = ModelRequest(
        model=model,
        system=SUMMARY_SYSTEM_PROMPT,
        messages=(UserMessage(ask),),
        tools=(),
        settings=settings or ModelSettings(),
    )
    done: ResponseDone | None = None
    async for event in provider.stream(request):
        if isinstance(event, ResponseDone):
            done = event
    text = done.message.text.strip() if done is not None else ""
    if not text:
        raise ProviderError("compaction failed: the model returned no summary")
    return Summary(text, done.usage if done is not None else Usage())
