"""docs/sessions.md stays true: the record types and header keys its table lists are
the ones a run writes (a team's delegation, a compaction and a fork included)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from assembler.agent import build_agent
from assembler.testing import ScriptedModel, text, tool_call

DOC = Path(__file__).resolve().parents[2] / "docs" / "sessions.md"


def documented_types() -> set[str]:
    table = DOC.read_text().split("## Record types", 1)[1].split("###", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    return {m.group(1) for row in rows[1:] if (m := re.match(r"\| `(\w+)`", row))}


def test_the_documented_record_types_are_the_written_ones(shipping: Path, tmp_path: Path) -> None:
    lead = shipping / "agents" / "team" / "lead.yaml"
    model = ScriptedModel(
        [
            tool_call("reviewer", task="Review shipping/fees.py."),
            text("The reviewer is done."),
            text("Second answer."),
            text("## Goal\nthe summary"),
        ]
    )
    agent = build_agent(lead, provider=model, session_dir=tmp_path / "sessions", trust=True)

    async def go() -> None:
        async with agent:
            await agent.prompt("Review the fees.")
            await agent.prompt("Anything else?")
            await agent.compact()
            assert agent.session is not None
            agent.fork(agent.session.entries()[2].id)

    asyncio.run(go())
    # and a plan (`todo_write`, issue 27), from an agent that has the tool
    (tmp_path / "work").mkdir()
    planner = tmp_path / "planner.yaml"
    planner.write_text(
        "version: 1\nname: planner\nidentity: You plan.\nworkspace: work\ntools: {sets: [todo]}\n"
    )
    todos = [{"content": "Fix the fee", "status": "in_progress"}]
    plan_model = ScriptedModel([tool_call("todo_write", todos=todos), text("Planned.")])
    planned = build_agent(planner, provider=plan_model, session_dir=tmp_path / "sessions")

    async def plan() -> None:
        async with planned:
            await planned.prompt("Plan it.")

    asyncio.run(plan())
    written: set[str] = set()
    header_keys: set[str] = set()
    for path in (tmp_path / "sessions").glob("*.jsonl"):
        if path.name.endswith(".trace.jsonl"):
            continue
        header, *entries = (json.loads(line) for line in path.read_text().splitlines())
        header_keys |= set(header)
        written |= {entry["type"] for entry in entries}
    assert (
        written
        == documented_types()
        == {"message", "event", "compaction", "subagent", "prompt", "plan"}
    )
    doc = DOC.read_text()
    for key in header_keys - {"type"}:
        assert f"`{key}`" in doc, key
