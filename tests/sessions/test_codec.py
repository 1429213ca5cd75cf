"""Messages survive the trip to a session file and back, exactly; bad records say why."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assembler.errors import SessionError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from assembler.sessions.codec import (
    message_from_dict,
    message_to_dict,
    usage_from_dict,
    usage_to_dict,
)

EXAMPLES: list[Message] = [
    UserMessage("fix the failing test \u2028 please\nnow"),
    UserMessage(""),
    ContextMessage("memory: the user prefers tabs"),
    AssistantMessage(),
    AssistantMessage(text="Let me look.", tool_calls=()),
    AssistantMessage(
        text="",
        tool_calls=(
            ToolCall("call_1", "read", {"path": "src/a.py", "limit": 20}, '{"path":"src/a.py"}'),
            ToolCall("call_2", "bash", {"command": "ls", "nested": {"a": [1, None, True]}}),
        ),
    ),
    AssistantMessage(
        text="broken call",
        tool_calls=(
            ToolCall(
                "call_3",
                "edit",
                None,
                raw_arguments='{"path": "a.py", "old": ',
                arguments_error="Expecting value: line 1 column 25",
            ),
        ),
    ),
    ToolResultMessage("call_1", "read", "1\timport os\n", is_error=False),
    ToolResultMessage("call_3", "edit", "the arguments are not a JSON object", is_error=True),
]


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_type_round_trips_exactly(msg: Message) -> None:
    stored = message_to_dict(msg)
    assert json.loads(json.dumps(stored)) == stored  # plain JSON, nothing Python-only
    assert message_from_dict(stored) == msg
    assert message_from_dict(json.loads(json.dumps(stored, ensure_ascii=False))) == msg


def test_the_stored_form_is_spelled_out() -> None:
    call = ToolCall("c", "edit", None, raw_arguments="{oops", arguments_error="bad JSON")
    assert message_to_dict(AssistantMessage("hi", (call,))) == {
        "role": "assistant",
        "text": "hi",
        "tool_calls": [
            {
                "id": "c",
                "name": "edit",
                "arguments": None,
                "raw_arguments": "{oops",
                "arguments_error": "bad JSON",
            }
        ],
    }
    assert message_to_dict(UserMessage("q")) == {"role": "user", "content": "q"}
    assert message_to_dict(ContextMessage("m")) == {"role": "context", "content": "m"}
    assert message_to_dict(ToolResultMessage("c", "edit", "ok")) == {
        "role": "tool",
        "tool_call_id": "c",
        "name": "edit",
        "content": "ok",
        "is_error": False,
    }


def test_optional_fields_default_when_absent() -> None:
    assert message_from_dict({"role": "assistant"}) == AssistantMessage()
    assert message_from_dict(
        {"role": "assistant", "tool_calls": [{"id": "x", "name": "ls", "arguments": {}}]}
    ) == AssistantMessage(tool_calls=(ToolCall("x", "ls", {}),))
    assert message_from_dict(
        {"role": "tool", "tool_call_id": "x", "name": "ls", "content": ""}
    ) == ToolResultMessage("x", "ls", "")


def test_usage_round_trips() -> None:
    for usage in (Usage(), Usage(1234, 56)):
        assert usage_from_dict(usage_to_dict(usage)) == usage
    assert usage_to_dict(Usage(3, 4)) == {"input_tokens": 3, "output_tokens": 4}
    assert usage_from_dict({}) == Usage()


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        ({"content": "no role"}, "no 'role'"),
        ({"role": "system", "content": "x"}, "unknown message role 'system'"),
        ({"role": "user"}, "'content' is missing"),
        ({"role": "user", "content": 3}, "'content' must be a string, not a number"),
        ({"role": "assistant", "tool_calls": {}}, "'tool_calls' must be a list"),
        ({"role": "assistant", "tool_calls": ["x"]}, "tool call record must be a JSON object"),
        (
            {"role": "assistant", "tool_calls": [{"id": "a", "name": "b", "arguments": []}]},
            "'arguments' must be a JSON object or null, not an array",
        ),
        ({"role": "assistant", "tool_calls": [{"name": "b"}]}, "tool call: the field 'id'"),
        (
            {"role": "tool", "tool_call_id": "a", "name": "b", "content": "", "is_error": "no"},
            "'is_error' must be a boolean",
        ),
        ({"role": "tool", "name": "b", "content": ""}, "'tool_call_id' is missing"),
    ],
)
def test_malformed_records_raise_a_clear_session_error(
    record: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(SessionError, match=re.escape(fragment)):
        message_from_dict(record)


@pytest.mark.parametrize("value", [None, [], "user", 3])
def test_a_record_that_is_not_an_object_is_refused(value: object) -> None:
    with pytest.raises(SessionError, match="must be a JSON object"):
        message_from_dict(value)


@pytest.mark.parametrize(
    "record", [[], {"input_tokens": -1}, {"output_tokens": "3"}, {"input_tokens": True}]
)
def test_malformed_usage_is_refused(record: object) -> None:
    with pytest.raises(SessionError, match="usage"):
        usage_from_dict(record)


def test_an_unknown_message_object_cannot_be_stored() -> None:
    with pytest.raises(SessionError, match="cannot store a message of type str"):
        message_to_dict("hello")  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
tool_calls = st.builds(
    ToolCall,
    id=st.text(),
    name=st.text(),
    arguments=st.none() | st.dictionaries(st.text(), json_values, max_size=4),
    raw_arguments=st.text(),
    arguments_error=st.text(),
)
messages = st.one_of(
    st.builds(UserMessage, content=st.text()),
    st.builds(ContextMessage, content=st.text()),
    st.builds(AssistantMessage, text=st.text(), tool_calls=st.tuples(tool_calls, tool_calls)),
    st.builds(ToolResultMessage, st.text(), st.text(), st.text(), st.booleans()),
)


@given(messages)
def test_arbitrary_messages_round_trip_through_json(msg: Message) -> None:
    line = json.dumps(message_to_dict(msg), ensure_ascii=False)
    assert message_from_dict(json.loads(line)) == msg
