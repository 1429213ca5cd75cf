"""Reasoning in the session codec: thinking blocks stored byte for byte (signatures
included) and read back, redacted blocks as their data, bad records refused."""

from __future__ import annotations

import pytest

from assembler.errors import SessionError
from assembler.messages import AssistantMessage, Reasoning
from assembler.sessions.codec import (
    message_from_dict,
    message_to_dict,
    reasoning_from_dict,
    reasoning_to_dict,
)

BLOCKS = (
    Reasoning(kind="thinking", text="Read the file first.", signature="c2lnbmF0dXJl"),
    Reasoning(kind="redacted_thinking", data="ZW5jcnlwdGVk"),
    Reasoning(kind="text", text="From reasoning_content."),
)


def test_reasoning_round_trips_through_the_session_record() -> None:
    message = AssistantMessage(text="Done.", reasoning=BLOCKS)
    stored = message_to_dict(message)
    assert stored["reasoning"] == [
        {"kind": "thinking", "text": "Read the file first.", "signature": "c2lnbmF0dXJl"},
        {"kind": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        {"kind": "text", "text": "From reasoning_content."},
    ]
    assert message_from_dict(stored) == message
    assert "reasoning" not in message_to_dict(AssistantMessage(text="plain"))


def test_missing_fields_read_as_empty() -> None:
    assert reasoning_from_dict({"kind": "text", "text": "t"}) == Reasoning(kind="text", text="t")
    block = reasoning_from_dict({"kind": "redacted_thinking", "data": "d"})
    assert (block.text, block.signature, block.data) == ("", "", "d")
    assert reasoning_to_dict(Reasoning(kind="thinking", text="x", signature="s")) == {
        "kind": "thinking",
        "text": "x",
        "signature": "s",
    }


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            {"role": "assistant", "text": "", "tool_calls": [], "reasoning": "x"},
            "'reasoning' must be a list",
        ),
        (
            {"role": "assistant", "text": "", "tool_calls": [], "reasoning": [{"kind": "dream"}]},
            "unknown kind 'dream'",
        ),
        (
            {"role": "assistant", "text": "", "tool_calls": [], "reasoning": ["x"]},
            "must be a JSON object",
        ),
    ],
)
def test_bad_reasoning_records_are_refused(record: dict[str, object], message: str) -> None:
    with pytest.raises(SessionError, match=message):
        message_from_dict(record)
