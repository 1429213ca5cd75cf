"""Events that a running tool sends (`ToolContext.emit`) reach the run's stream live,
between the calls' proposals and their results."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assembler.prompt.provider import SystemPromptProvider
from assembler.prompt.renderer import DynamicPromptRenderer, WorkspaceView
from assembler.runner.events import (
    Event,
    RunEnd,
    SubagentEvent,
    TextDeltaEvent,
    ToolCallProposed,
    ToolCallResult,
)
from assembler.runner.loop import AgentRunner
from assembler.runner.parts import RunParts
from assembler.testing import ScriptedModel, text, tool_call
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry

SCHEMA = {"type": "object", "properties": {}}


def runner(tools: list[Tool], steps: list[Any]) -> AgentRunner:
    registry = ToolRegistry(tools)
    prompt = SystemPromptProvider(
        DynamicPromptRenderer(), identity="Test.", context={}, registry=registry,
        workspace=WorkspaceView("/ws"),
    )  # fmt: skip
    return AgentRunner(
        provider=ScriptedModel(steps),
        parts=RunParts(prompt, registry),
        tool_context=ToolContext(Path("/ws")),
    )


def test_a_running_tools_events_are_yielded_before_it_finishes() -> None:
    seen_first = asyncio.Event()

    async def chatty(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        assert context.emit is not None and context.call_id == "call_1_1"
        context.emit(SubagentEvent("lead/child", TextDeltaEvent("working"), context.call_id))
        # finishing depends on the stream having delivered the event: no deadlock means live
        await asyncio.wait_for(seen_first.wait(), timeout=20)
        context.emit(SubagentEvent("lead/child", TextDeltaEvent("done"), context.call_id))
        return ToolResult("finished")

    agent = runner([Tool("chatty", "Talks.", SCHEMA, chatty)], [tool_call("chatty"), text("ok")])

    async def main() -> list[Event]:
        events: list[Event] = []
        async for event in agent.run("go"):
            events.append(event)
            if isinstance(event, SubagentEvent):
                seen_first.set()
        return events

    events = asyncio.run(main())
    kinds = [type(e) for e in events]
    first = kinds.index(ToolCallProposed)
    tagged = [i for i, kind in enumerate(kinds) if kind is SubagentEvent]
    assert len(tagged) == 2 and first < tagged[0] < tagged[1] < kinds.index(ToolCallResult)
    assert [e.event.text for e in events if isinstance(e, SubagentEvent)] == ["working", "done"]  # type: ignore[union-attr]
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"


def test_a_tool_can_only_send_sub_agent_events() -> None:
    async def wrong(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        assert context.emit is not None
        context.emit(TextDeltaEvent("not wrapped"))
        return ToolResult("unreachable")

    agent = runner([Tool("wrong", "Wrong.", SCHEMA, wrong)], [tool_call("wrong"), text("ok")])

    async def main() -> list[Event]:
        return [event async for event in agent.run("go")]

    (result,) = [e for e in asyncio.run(main()) if isinstance(e, ToolCallResult)]
    assert result.is_error
    assert result.content == (
        "tool `wrong` failed: TypeError: a tool can send sub-agent events only, not TextDeltaEvent"
    )


def test_closing_the_stream_while_a_tool_runs_cancels_and_settles_it() -> None:
    stopped: list[str] = []

    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        assert context.emit is not None
        context.emit(SubagentEvent("lead/child", TextDeltaEvent("started"), context.call_id))
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)  # winding down takes a moment, and is waited for
            stopped.append("cleaned up")
            raise
        return ToolResult("unreachable")

    agent = runner([Tool("slow", "Slow.", SCHEMA, slow)], [tool_call("slow")])

    async def main() -> None:
        stream = agent.run("go")
        async for event in stream:
            if isinstance(event, SubagentEvent):
                break
        await stream.aclose()  # type: ignore[attr-defined]
        assert stopped == ["cleaned up"]  # before aclose returned

    asyncio.run(main())
    assert agent.messages[-1].content == "cancelled by the user"  # type: ignore[union-attr]
