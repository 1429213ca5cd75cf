"""A request prefix that changes between turns is reported once: the prompt cache
cannot serve it. The per-turn part of the system prompt may change freely."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from assembler.messages import AssistantMessage, ModelRequest, ToolCall, ToolSchema
from assembler.runner.events import Diagnostic, RunEnd
from assembler.runner.loop import AgentRunner
from assembler.runner.parts import RunParts
from assembler.runner.prefix import PrefixWatch
from assembler.testing import FunctionModel
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry


def request(
    system: str, stable: int | None = None, tools: tuple[ToolSchema, ...] = ()
) -> ModelRequest:
    return ModelRequest("m", system, (), tools, system_stable=stable)


def test_only_the_stable_part_counts_and_a_warning_comes_once() -> None:
    watch = PrefixWatch()
    assert watch.check(request("## identity\nA.\n\n## memory\n1", 13)) is None
    assert watch.check(request("## identity\nA.\n\n## memory\n2", 13)) is None  # per turn
    note = watch.check(request("## identity\nB.\n\n## memory\n2", 13))
    assert note is not None and note.startswith("the system prompt before its per-turn part")
    assert watch.check(request("## identity\nC.", None)) is None  # said once
    tools = PrefixWatch()
    one = (ToolSchema("a", "A tool.", {"type": "object"}),)
    assert tools.check(request("x", tools=one)) is None
    assert (
        tools.check(request("x", tools=(ToolSchema("a", "A tool.", {"type": "object"}),))) is None
    )
    changed = tools.check(request("x", tools=(ToolSchema("a", "Now 12:01.", {"type": "object"}),)))
    assert changed is not None and changed.startswith("the tool schemas")


def test_a_prompt_with_a_counter_is_reported_in_the_run() -> None:
    turns: list[int] = []

    def prompt() -> str:
        turns.append(1)
        return f"## identity\nTurn {len(turns)} of the agent."

    async def noop(arguments: Any, context: ToolContext) -> ToolResult:
        return ToolResult("ok")

    def reply(request: ModelRequest) -> AssistantMessage | str:
        if len(turns) < 3:
            return AssistantMessage(tool_calls=(ToolCall("", "noop", {}),))
        return "done"

    registry = ToolRegistry()
    registry.register(Tool("noop", "No-op.", {"type": "object"}, noop, snippet="Nothing"))
    runner = AgentRunner(
        provider=FunctionModel(reply),
        parts=RunParts(prompt, registry),
        tool_context=ToolContext(workspace=Path.cwd()),
    )

    async def collect() -> list[Any]:
        return [event async for event in runner.run("go")]

    events = asyncio.run(collect())
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"
    notes = [e.message for e in events if isinstance(e, Diagnostic)]
    assert len(notes) == 1 and "prompt cache cannot serve it" in notes[0]
