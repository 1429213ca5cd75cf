"""Reading the answer to a permission question typed at the terminal."""

from __future__ import annotations

import pytest

from assembler.cli.approval import choices, describe_call, parse_answer
from assembler.messages import ToolCall
from assembler.permissions.gate import Approval, ApprovalRequest
from assembler.permissions.policy import Decision

ASK = Decision("ask", "no rule matches; the default is ask", None, "default")
WITH_RULE = ApprovalRequest(
    ToolCall("c1", "bash", {"command": "git push"}), ASK, ("bash(git push)",)
)
WITHOUT = ApprovalRequest(ToolCall("c2", "bash", {"command": "echo x | sh"}), ASK, ())


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("y", Approval("once")),
        (" YES ", Approval("once")),
        ("a", Approval("session")),
        ("always", Approval("session")),
        ("n", Approval("deny")),
        ("", Approval("deny")),
        ("n not on main", Approval("deny", "not on main")),
        ("no: use a branch", Approval("deny", "use a branch")),
        ("maybe", None),
        ("yy", None),
    ],
)
def test_answers(typed: str, expected: Approval | None) -> None:
    assert parse_answer(typed, WITH_RULE) == expected


def test_a_is_no_answer_when_no_rule_could_allow_the_call() -> None:
    assert parse_answer("a", WITHOUT) is None
    assert "[a]" not in choices(WITHOUT)
    assert "[a] allow `bash(git push)` for this session" in choices(WITH_RULE)


def test_the_call_is_shown_whole() -> None:
    long = ApprovalRequest(ToolCall("c3", "write", {"path": "x", "content": "y" * 500}), ASK)
    assert describe_call(long) == "write:\n  path: x\n  content: " + "y" * 500
    assert describe_call(WITH_RULE) == "bash: git push"
    lines = ApprovalRequest(ToolCall("c5", "bash", {"command": "a\n\n b "}), ASK)
    assert describe_call(lines) == "bash:\n  command:\n  | a\n  | \n  |  b "
    unparsed = ApprovalRequest(ToolCall("c4", "edit", None, raw_arguments="{not json"), ASK)
    assert describe_call(unparsed) == (
        "edit (arguments that are not valid JSON, as the model wrote them):\n  | {not json"
    )
