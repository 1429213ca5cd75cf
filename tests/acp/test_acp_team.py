"""A team over ACP: the lead's calls to its sub-agents are `think` calls, and each
sub-agent's own tool calls reach the editor as calls of their own, titled with the
sub-agent's name and naming the files they touch."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp_harness import Editor, serving


def test_sub_agents_tool_calls_reach_the_editor(shipping: Path) -> None:
    lead = shipping / "agents" / "team" / "lead.yaml"
    editor = Editor()

    async def scenario() -> tuple[str, str]:
        async with serving(lead, "--no-session", editor=editor) as acp:
            session = await acp.start()
            answer = await asyncio.wait_for(acp.prompt(session, "Review and test."), 120)
            return session, answer.stop_reason

    session, stop = asyncio.run(scenario())
    assert stop == "end_turn"
    starts = {s.tool_call_id: s for s in editor.starts(session)}
    reviewer = next(s for s in starts.values() if s.title.startswith("reviewer: Review"))
    assert reviewer.kind == "think"
    child_read = next(s for s in starts.values() if s.title == "reviewer: Read shipping/fees.py")
    assert child_read.tool_call_id.startswith(f"lead/reviewer:{reviewer.tool_call_id}:")
    assert child_read.kind == "read"
    fees = shipping / "examples" / "shipping" / "shipping" / "fees.py"
    assert [loc.path for loc in child_read.locations or []] == [str(fees)]
    finished = {u.tool_call_id: u.status for u in editor.progress(session)}
    assert set(finished) == set(starts)  # every call that started, ended
    assert finished[child_read.tool_call_id] == "completed"
    assert finished[reviewer.tool_call_id] == "completed"
    assert editor.text(session).startswith("Splitting the work")
    assert "The team is done." in editor.text(session)
