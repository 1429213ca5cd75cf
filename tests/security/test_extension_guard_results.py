"""Issue 11, item 18: a `tool_call` guard fails closed on anything but the documented
answers. `None` allows; `Block(reason)` or `{"block": True, "reason": ...}` blocks;
any other value (`True`, `{}`, `{"reason": ...}`, ...) used to let the call run and
now blocks, with a reason naming the extension and what it returned.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from extension_project import project, run_bounded

from assembler.messages import ToolResultMessage
from assembler.runner.events import ToolCallBlocked, ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call

WRITE = tool_call("write", path="out.txt", content="side effect")


def guard(returned: str, *, is_async: bool = False) -> str:
    return f"""
def setup(api, options):
    @api.on("tool_call")
    {"async " if is_async else ""}def guard(event):
        return {returned}
"""


@pytest.mark.parametrize(
    ("returned", "shown"),
    [
        ("True", "bool: True"),
        ("False", "bool: False"),
        ("{}", "dict: {}"),
        ('{"reason": "looks fine"}', "dict: {'reason': 'looks fine'}"),
        ('{"block": False}', "dict: {'block': False}"),
        ('{"block": "no"}', "dict: {'block': 'no'}"),
        ('{"allow": True}', "dict: {'allow': True}"),
        ("0", "int: 0"),
        ("[]", "list: []"),
        ('"allow"', "str: 'allow'"),
    ],
)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_unexpected_answer_blocks_the_call(
    tmp_path: Path, returned: str, shown: str, is_async: bool
) -> None:
    manifest = project(tmp_path, {"sloppy": guard(returned, is_async=is_async)})
    model = ScriptedModel([WRITE, text("ok")])
    events, _, failure = run_bounded(manifest, model)
    assert failure is None
    assert not (tmp_path / "ws" / "out.txt").exists()
    blocked = [e for e in events if isinstance(e, ToolCallBlocked)]
    assert len(blocked) == 1 and blocked[0].blocked_by == "sloppy"
    assert f"returned {shown}" in blocked[0].reason and "fail closed" in blocked[0].reason
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.is_error and not result.executed
    seen = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert seen[0].content.startswith("tool call blocked by sloppy: tool_call handler returned")


@pytest.mark.parametrize(
    ("returned", "reason"),
    [
        ('Block("no writes")', "no writes"),
        ('{"block": True, "reason": "no writes"}', "no writes"),
        ('{"block": True}', "blocked"),
    ],
)
def test_the_documented_blocks_still_block(tmp_path: Path, returned: str, reason: str) -> None:
    source = "from assembler.extensions import Block\n" + guard(returned)
    manifest = project(tmp_path, {"strict": source})
    events, _, failure = run_bounded(manifest, ScriptedModel([WRITE, text("ok")]))
    assert failure is None
    assert not (tmp_path / "ws" / "out.txt").exists()
    blocked = next(e for e in events if isinstance(e, ToolCallBlocked))
    assert (blocked.blocked_by, blocked.reason) == ("strict", reason)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_none_allows(tmp_path: Path, is_async: bool) -> None:
    manifest = project(tmp_path, {"fine": guard("None", is_async=is_async)})
    events, _, failure = run_bounded(manifest, ScriptedModel([WRITE, text("ok")]))
    assert failure is None
    assert (tmp_path / "ws" / "out.txt").read_text() == "side effect"
    assert not any(isinstance(e, ToolCallBlocked) for e in events)
