"""`assemble acp` with reasoning and budgets: the model's reasoning reaches the editor
as `agent_thought_chunk`s (never in the answer), and a budget stop ends the turn with
stop reason `max_tokens`, saying why in a thought."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp_harness import Editor, manifest, serving

SCRIPT = """\
- reasoning: "The notes file first. "
  tool_calls: [{name: read, arguments: {path: notes.txt}}]
- reasoning: "Now the other one."
  tool_calls: [{name: read, arguments: {path: notes.txt}}]
- text: Both read.
"""


def test_reasoning_is_thoughts_and_a_budget_stop_is_max_tokens(tmp_path: Path) -> None:
    agent = manifest(
        tmp_path, SCRIPT, extra="limits: {budget: {tool_calls: 1}}\n", files=[("notes.txt", "hi\n")]
    )
    editor = Editor()

    async def scenario() -> tuple[str, str]:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start(tmp_path / "work")
            answer = await acp.prompt(session, "Read it twice.")
            return session, answer.stop_reason

    session, stop = asyncio.run(scenario())
    assert stop == "max_tokens"
    thoughts = editor.thoughts(session)
    assert "The notes file first. Now the other one." in thoughts
    assert "the run budget `tool_calls` is spent: used 1 of 1" in thoughts
    assert "notes file" not in editor.text(session)
    assert len(editor.starts(session)) == 2  # the second call was announced, never run
