"""The plan (`todo_write`) through a real agent (issue 27): a successful call is a
`PlanUpdated` event right after its result and a `plan` entry in the session file; a
resumed or forked session starts with the plan it had; a wrong list is an error the
model reads on its next request, and the plan stays as it was."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from assembler.agent import Agent, build_agent
from assembler.messages import ToolResultMessage
from assembler.runner.events import Event, PlanUpdated, ToolCallResult
from assembler.sessions.plan import recorded_plan
from assembler.testing import ScriptedModel, text, tool_call
from assembler.tools.builtin.todo import TodoItem

PLAN = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Fix the fee", "status": "in_progress", "priority": "high"},
]


def manifest(tmp_path: Path, sets: str = "[readonly, todo]") -> Path:
    (tmp_path / "work").mkdir(exist_ok=True)
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"version: 1\nname: planner\nidentity: You plan.\nworkspace: work\ntools:\n  sets: {sets}\n"
    )
    return path


def build(tmp_path: Path, model: ScriptedModel, **kw: Any) -> Agent:
    return build_agent(manifest(tmp_path), provider=model, session_dir=tmp_path / "sessions", **kw)


async def stream(agent: Agent, prompt: str) -> list[Event]:
    return [event async for event in agent.stream(prompt)]


def test_a_plan_is_an_event_after_its_result_and_an_entry_of_the_session(
    tmp_path: Path,
) -> None:
    model = ScriptedModel([tool_call("todo_write", todos=PLAN), text("Planned.")])

    async def scenario() -> tuple[list[Event], Agent]:
        agent = build(tmp_path, model)
        try:
            return await stream(agent, "Plan it."), agent
        finally:
            await agent.aclose()

    events, agent = asyncio.run(scenario())
    kinds = [type(e).__name__ for e in events if isinstance(e, ToolCallResult | PlanUpdated)]
    assert kinds == ["ToolCallResult", "PlanUpdated"]
    plan = next(e for e in events if isinstance(e, PlanUpdated))
    expected = (
        TodoItem("Read the code", "completed", "medium"),
        TodoItem("Fix the fee", "in_progress", "high"),
    )
    assert plan.entries == expected
    assert plan.to_dict() == {
        "type": "plan",
        "call_id": plan.call_id,
        "entries": [
            {"content": "Read the code", "status": "completed", "priority": "medium"},
            {"content": "Fix the fee", "status": "in_progress", "priority": "high"},
        ],
    }
    assert agent.state().plan == expected
    assert agent.session is not None
    records = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    assert [r["entries"] for r in records if r["type"] == "plan"] == [plan.to_dict()["entries"]]
    # the model read the confirmation
    result = next(m for m in model.last_request.messages if isinstance(m, ToolResultMessage))
    assert result.content.startswith("Plan updated: 2 items") and not result.is_error


def test_resume_and_fork_restore_the_plan(tmp_path: Path) -> None:
    first = ScriptedModel(
        [
            tool_call("todo_write", todos=PLAN),
            tool_call("todo_write", todos=[{"content": "Ship", "status": "completed"}]),
            text("Done."),
        ]
    )

    async def scenario() -> tuple[str, list[str]]:
        agent = build(tmp_path, first)
        try:
            await stream(agent, "Plan it.")
            assert agent.session is not None
            entries = [e.id for e in agent.session.branch() if e.type == "plan"]
            return agent.session.id, entries
        finally:
            await agent.aclose()

    session_id, plan_entries = asyncio.run(scenario())
    resumed = build(tmp_path, ScriptedModel([]), session=session_id)
    assert resumed.plan == (TodoItem("Ship", "completed"),)
    assert resumed.state().plan == resumed.plan
    # forked from the first plan's entry: the plan as it was there
    forked = build(tmp_path, ScriptedModel([]), session=session_id, fork=plan_entries[0])
    assert [item.content for item in forked.plan] == ["Read the code", "Fix the fee"]
    assert resumed.session is not None and forked.session is not None
    assert recorded_plan(forked.session) == forked.plan
    asyncio.run(resumed.aclose())
    asyncio.run(forked.aclose())


def test_a_wrong_list_is_an_error_the_model_reads_and_the_plan_stays(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call("todo_write", todos=PLAN),
            tool_call("todo_write", todos=[{"content": "Fix", "status": "done"}]),
            tool_call("todo_write", todos="fix it"),
            text("Sorry."),
        ]
    )

    async def scenario() -> tuple[list[Event], Agent]:
        agent = build(tmp_path, model)
        try:
            return await stream(agent, "Plan it."), agent
        finally:
            await agent.aclose()

    events, agent = asyncio.run(scenario())
    assert sum(isinstance(e, PlanUpdated) for e in events) == 1
    errors = [e for e in events if isinstance(e, ToolCallResult) and e.is_error]
    assert [e.executed for e in errors] == [True, True]
    seen = [
        m.content
        for m in model.last_request.messages
        if isinstance(m, ToolResultMessage) and m.is_error
    ]
    assert seen == [
        "todos[0].status must be one of pending, in_progress, completed, not 'done'",
        "argument 'todos' must be a list of items, not a string",
    ]
    assert [item.content for item in agent.plan] == ["Read the code", "Fix the fee"]
    assert events[-1].to_dict()["reason"] == "completed"


def test_without_the_set_there_is_no_plan_tool(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("todo_write", todos=PLAN), text("No.")])
    agent = build_agent(manifest(tmp_path, "[readonly]"), provider=model, record_session=False)
    events = asyncio.run(stream(agent, "Plan it."))
    asyncio.run(agent.aclose())
    assert not any(isinstance(e, PlanUpdated) for e in events)
    assert agent.plan == ()
    assert "todo_write" not in {schema.name for schema in model.requests[0].tools}
