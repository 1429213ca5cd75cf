"""What a session record promises, pinned (found by mutation testing:
`python bench/mutation.py codec`, docs/testing.md).

Prompt-cache counts are what a user reads back to see what a resumed session cost;
each of the two survives the trip on its own. A malformed record's message names the
kind of record and the field, whole, because that line is all a user has to find the
damage in a session file.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from assembler.errors import SessionError
from assembler.messages import Usage
from assembler.sessions.codec import message_from_dict, usage_from_dict, usage_to_dict


@pytest.mark.parametrize(
    "usage",
    [Usage(10, 2, cache_read_tokens=7), Usage(10, 2, cache_write_tokens=9), Usage(5, 1, 3, 4)],
    ids=["read only", "write only", "both"],
)
def test_each_prompt_cache_count_survives_a_trip_through_the_file(usage: Usage) -> None:
    stored = json.loads(json.dumps(usage_to_dict(usage)))
    assert usage_from_dict(stored) == usage


def test_cache_counts_are_stored_by_name() -> None:
    assert usage_to_dict(Usage(5, 1, 3, 4)) == {
        "input_tokens": 5,
        "output_tokens": 1,
        "cache_read_tokens": 3,
        "cache_write_tokens": 4,
    }
    assert usage_from_dict({"cache_write_tokens": 4}) == Usage(cache_write_tokens=4)


CALL = {"id": "call_1", "name": "read", "arguments": {}}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"role": "user"}, "user message: the field 'content' is missing"),
        (
            {"role": "context", "content": 1},
            "context message: 'content' must be a string, not a number",
        ),
        (
            {"role": "assistant", "text": 2},
            "assistant message: 'text' must be a string, not a number",
        ),
        (
            {"role": "tool", "name": "b", "content": ""},
            "tool result: the field 'tool_call_id' is missing",
        ),
        (
            {"role": "tool", "tool_call_id": "a", "content": ""},
            "tool result: the field 'name' is missing",
        ),
        (
            {"role": "tool", "tool_call_id": "a", "name": "b", "content": None},
            "tool result: 'content' must be a string, not null",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "a"}]},
            "tool call: the field 'name' is missing",
        ),
        (
            {"role": "assistant", "tool_calls": [{**CALL, "raw_arguments": 1}]},
            "tool call: 'raw_arguments' must be a string, not a number",
        ),
        (
            {"role": "assistant", "tool_calls": [{**CALL, "arguments_error": []}]},
            "tool call: 'arguments_error' must be a string, not an array",
        ),
    ],
)
def test_a_malformed_record_names_its_kind_and_field(record: dict[str, Any], message: str) -> None:
    with pytest.raises(SessionError) as raised:
        message_from_dict(record)
    assert str(raised.value) == message
