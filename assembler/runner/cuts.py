"""A reply cut at `max_tokens` inside a tool call: never run, retried once larger.

When a reply reaches its token limit while the model is still writing a tool call's
arguments, those arguments are incomplete, even when what arrived happens to parse
(a JSON object cut at a boundary can be valid and wrong). Such a call never runs. The
runner asks once more with a larger limit (`larger_limit`); when that is not possible
or is cut again, the calls keep the reply's place in the conversation with their
arguments marked unusable (`cut_calls`), so each gets an error result that tells the
model what happened, and the model can continue in smaller pieces.
"""

from __future__ import annotations

from dataclasses import replace

from assembler.messages import AssistantMessage, ResponseDone

__all__ = ["CUT_NOTE", "CUT_REASONS", "cut_calls", "larger_limit", "was_cut"]

CUT_REASONS = frozenset({"max_tokens", "length"})
"""Stop reasons meaning "the reply reached its limit": Anthropic's and OpenAI's."""

CUT_NOTE = (
    "the reply was cut at max_tokens before these arguments were complete, so the call "
    "was not run; send it again with less in one call (write a large file in parts)"
)

_FIRST_RETRY = 8192
"""What a retry asks for when the cut request had no limit of its own."""


def was_cut(done: ResponseDone) -> bool:
    """The reply stopped at its token limit with tool calls in it."""
    return done.stop_reason in CUT_REASONS and bool(done.message.tool_calls)


def cut_calls(message: AssistantMessage) -> AssistantMessage:
    """`message` with every tool call's arguments marked cut (so none of them runs:
    the last one was cut, and running the others alone would split what the model
    meant as one step)."""
    calls = tuple(
        replace(call, arguments=None, arguments_error=CUT_NOTE) for call in message.tool_calls
    )
    return replace(message, tool_calls=calls)


def larger_limit(sent: int | None, model_max: int | None) -> int | None:
    """Twice the limit that cut the reply, at most the model's own; None when nothing
    larger can be asked."""
    wanted = 2 * sent if sent else _FIRST_RETRY
    if model_max is not None:
        wanted = min(wanted, model_max)
    if sent is not None and wanted <= sent:
        return None
    return wanted
