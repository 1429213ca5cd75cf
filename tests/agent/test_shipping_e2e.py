"""The shipping-fee agent of DESIGN.md section 9, end to end with a scripted model.

A real copy of the example repository, real tools (read, edit, bash running the
example's real tests), the real safety extension. Only the model is a replay.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from assembler.agent.build import build_agent
from assembler.messages import ToolResultMessage
from assembler.resources.loader import LoaderFlags
from assembler.runner.events import RunEnd, ToolCallResult
from assembler.sessions.trace import read_trace
from assembler.testing import ScriptedModel, text, tool_call
from assembler.validation.load import load_manifest

TESTS = "python3 -m unittest discover -s tests -t ."
SOURCE_FIX = {
    "path": "shipping/fees.py",
    "old_text": "math.floor(weight_kg)",
    "new_text": "math.ceil(weight_kg)",
}
TEST_EDIT = {"path": "tests/test_fees.py", "old_text": "499 + 2 * 150", "new_text": "499 + 1 * 150"}


def example_tests_pass(workspace: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."],
        cwd=workspace,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def run(agent: Any, prompt: str) -> list[Any]:
    async def go() -> list[Any]:
        async with agent:
            return [event async for event in agent.stream(prompt)]

    return asyncio.run(go())


def test_the_agent_reads_fixes_and_proves_the_fix(shipping: Path) -> None:
    workspace = shipping / "examples" / "shipping"
    assert not example_tests_pass(workspace)
    model = ScriptedModel(
        [
            tool_call("read", path="shipping/fees.py"),
            tool_call("edit", **SOURCE_FIX),
            tool_call("bash", command=TESTS),
            text("Fixed: started kilograms round up."),
        ]
    )
    agent = build_agent(
        load_manifest(shipping / "agents" / "shipping-fixer.yaml"),
        provider=model,
        flags=LoaderFlags(no_extensions=True),
        record_session=False,
    )
    events = run(agent, "Fix the failing shipping test.")
    model.assert_consumed()
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert [r.call.name for r in results] == ["read", "edit", "bash"]
    assert "math.floor(weight_kg)" in results[0].content
    assert not results[1].is_error
    assert results[2].details["exit_code"] == 0 and "OK" in results[2].content
    assert "math.ceil(weight_kg)" in (workspace / "shipping" / "fees.py").read_text()
    assert example_tests_pass(workspace)
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"


def test_the_safety_extension_blocks_the_test_edit_and_the_fix_lands(shipping: Path) -> None:
    workspace = shipping / "examples" / "shipping"
    test_file = workspace / "tests" / "test_fees.py"
    original = test_file.read_bytes()
    model = ScriptedModel(
        [
            tool_call("edit", **TEST_EDIT),
            tool_call("edit", **SOURCE_FIX),
            tool_call("bash", command=TESTS),
            text("Fixed in the source."),
        ]
    )
    sessions = shipping / "sessions"
    agent = build_agent(
        load_manifest(shipping / "agents" / "shipping-fixer.yaml"),
        provider=model,
        trust=True,
        session_dir=sessions,
    )
    events = run(agent, "Fix the failing shipping test.")
    assert test_file.read_bytes() == original
    assert example_tests_pass(workspace)
    # the model saw the reason
    seen = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert seen[0].is_error and "tests/test_fees.py is a test file" in seen[0].content
    # the trace shows the proposal, the block, and what the model saw
    trace_file = next(sessions.glob("*.trace.jsonl"))
    records = list(read_trace(trace_file))
    blocked = records[0]
    assert blocked["tool"] == "edit"
    assert blocked["proposed"]["arguments"] == TEST_EDIT
    assert blocked["decision"] == {
        "allowed": False,
        "blocked_by": "protect_tests",
        "reason": "tests/test_fees.py is a test file, and the tests are this repository's "
        "specification: fix the source instead",
    }
    assert blocked["executed"] is False and blocked["raw_result"] is None
    assert blocked["model_saw"]["is_error"] is True
    assert "protect_tests" in blocked["model_saw"]["content"]
    assert blocked["effects"] == ["control_flow"]
    assert [r["executed"] for r in records] == [False, True, True]
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"


REWRITE_ONLY = """
from assembler.extensions import ResultPatch

def setup(api, options):
    @api.on("tool_result")
    def pretend_blocked(event):
        if event.name == "edit" and "tests/" in str(event.call.arguments.get("path")):
            return ResultPatch(content="blocked", is_error=True)
"""


def test_rewriting_the_result_to_blocked_does_not_prevent_the_write(shipping: Path) -> None:
    """The anti-pattern of DESIGN.md section 7: the trace shows the write happened."""
    agents = shipping / "agents"
    (agents / "extensions" / "pretend.py").write_text(textwrap.dedent(REWRITE_ONLY))
    manifest = agents / "shipping-fixer.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "path: extensions/protect_tests.py", "path: extensions/pretend.py"
        )
    )
    test_file = shipping / "examples" / "shipping" / "tests" / "test_fees.py"
    original = test_file.read_bytes()
    model = ScriptedModel([tool_call("edit", **TEST_EDIT), text("done")])
    sessions = shipping / "sessions"
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, session_dir=sessions)
    run(agent, "Fix it.")
    assert test_file.read_bytes() != original  # the side effect happened
    record = read_trace(next(sessions.glob("*.trace.jsonl")))[0]
    assert record["decision"]["allowed"] is True
    assert record["executed"] is True
    assert record["raw_result"]["is_error"] is False
    assert record["rewritten_by"] == ["pretend"]
    assert record["model_saw"] == {
        "content": "blocked",
        "is_error": True,
        "details": record["model_saw"]["details"],
    }
    assert record["effects"] == ["observation"]


def test_the_session_file_records_the_conversation(shipping: Path) -> None:
    from assembler.sessions.store import SessionStore

    model = ScriptedModel([tool_call("read", path="AGENTS.md"), text("Read it.")])
    sessions = shipping / "sessions"
    agent = build_agent(
        load_manifest(shipping / "agents" / "shipping-fixer.yaml"),
        provider=model,
        trust=True,
        session_dir=sessions,
    )
    run(agent, "What does AGENTS.md say?")
    session = SessionStore(sessions).open(SessionStore(sessions).latest().path)  # type: ignore[union-attr]
    messages = session.messages()
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages == agent.messages
    for line in session.path.read_text().splitlines():
        json.loads(line)  # one complete record per line
