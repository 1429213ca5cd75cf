"""AgentRunner: the prompt provider contract, the registry's timing, tool calls."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.errors import PromptContextError, RenderError
from assembler.messages import AssistantMessage, ModelRequest, ToolCall, ToolResultMessage
from assembler.prompt.provider import SystemPromptProvider
from assembler.prompt.renderer import DynamicPromptRenderer, WorkspaceView
from assembler.runner.events import (
    RunEnd,
    TextDeltaEvent,
    ToolCallResult,
    TurnEnd,
    TurnStart,
    UsageEvent,
)
from assembler.runner.loop import AgentRunner
from assembler.runner.parts import RunParts
from assembler.testing import FunctionModel, ScriptedModel, text, tool_call
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry


def make_tool(name: str, output: str = "ok", *, calls: list[str] | None = None) -> Tool:
    async def execute(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if calls is not None:
            calls.append(name)
        return ToolResult(f"{output}: {dict(arguments)}")

    return Tool(name, f"The {name} tool.", {"type": "object"}, execute, snippet=f"Does {name}")


def make_runner(model: Any, registry: ToolRegistry, prompt: Any = None, **kw: Any) -> AgentRunner:
    return AgentRunner(
        provider=model,
        parts=RunParts(
            prompt if prompt is not None else (lambda: "## identity\nA test agent."), registry
        ),
        tool_context=ToolContext(workspace=Path.cwd()),
        **kw,
    )


def run(runner: AgentRunner, prompt: str = "go") -> list[Any]:
    async def collect() -> list[Any]:
        return [event async for event in runner.run(prompt)]

    return asyncio.run(collect())


def live_prompt(registry: ToolRegistry) -> SystemPromptProvider:
    return SystemPromptProvider(
        DynamicPromptRenderer(),
        identity="A test agent.",
        context={},
        registry=registry,
        workspace=WorkspaceView("/ws"),
    )


def test_a_provider_that_is_not_callable_is_refused_at_construction() -> None:
    with pytest.raises(RenderError, match="must be callable"):
        make_runner(ScriptedModel([text("hi")]), ToolRegistry(), prompt="## identity\nstatic")


def test_the_provider_is_called_before_every_model_request() -> None:
    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        return f"prompt #{len(calls)}"

    model = ScriptedModel([tool_call("echo", x=1), tool_call("echo", x=2), text("done")])
    run(make_runner(model, ToolRegistry([make_tool("echo")]), provider))
    assert len(calls) == 3
    assert [r.system for r in model.requests] == ["prompt #1", "prompt #2", "prompt #3"]
    model.assert_consumed()


@pytest.mark.parametrize("bad", [None, 42, b"bytes", "", "   \n"])
def test_a_provider_result_that_is_not_a_non_empty_str_raises(bad: Any) -> None:
    model = ScriptedModel([text("never sent")])
    runner = make_runner(model, ToolRegistry(), lambda: bad)
    with pytest.raises(RenderError):
        run(runner)
    assert model.requests == []


def test_no_fallback_to_an_earlier_prompt_when_the_provider_later_fails() -> None:
    answers = iter(["first prompt", ""])
    model = ScriptedModel([tool_call("echo"), text("unreachable")])
    runner = make_runner(model, ToolRegistry([make_tool("echo")]), lambda: next(answers))
    with pytest.raises(RenderError, match="empty prompt"):
        run(runner)
    assert [r.system for r in model.requests] == ["first prompt"]


def test_renderer_exceptions_are_not_caught() -> None:
    registry = ToolRegistry()
    provider = live_prompt(registry)
    calls = {"n": 0}

    def failing() -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise PromptContextError("NaN is not valid JSON", "$.x")
        return provider()

    model = ScriptedModel([tool_call("echo"), text("unreachable")])
    registry.register(make_tool("echo"))
    with pytest.raises(PromptContextError):
        run(make_runner(model, registry, failing))
    assert len(model.requests) == 1


def test_a_tool_registered_between_requests_reaches_the_next_request_only() -> None:
    registry = ToolRegistry()

    async def install(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        registry.register(make_tool("late"))
        return ToolResult("installed")

    registry.register(
        Tool("install", "Installs a tool.", {"type": "object"}, install, snippet="Install")
    )
    model = ScriptedModel([tool_call("install"), tool_call("late"), text("done")])
    run(make_runner(model, registry, live_prompt(registry)))
    first, second, _ = model.requests
    assert [t.name for t in first.tools] == ["install"]
    assert "- late" not in first.system
    assert [t.name for t in second.tools] == ["install", "late"]
    assert "- late: Does late" in second.system
    assert second.system.index("- install") < second.system.index("- late")


def test_a_removed_tool_disappears_from_prompt_and_schemas_of_the_next_request() -> None:
    registry = ToolRegistry([make_tool("keep"), make_tool("gone")])

    async def remove(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        registry.remove("gone")
        return ToolResult("removed")

    registry.register(Tool("remove", "Removes.", {"type": "object"}, remove))
    model = ScriptedModel([tool_call("remove"), text("done")])
    run(make_runner(model, registry, live_prompt(registry)))
    assert "gone" in [t.name for t in model.requests[0].tools]
    assert "gone" not in [t.name for t in model.requests[1].tools]
    assert "- gone" not in model.requests[1].system


def test_tool_calls_of_one_message_run_concurrently_and_return_in_issued_order() -> None:
    # `first` can only finish once `second` has started: run one after the other, the
    # first would wait forever (here: 10 s, then fail), so finishing proves they overlap.
    second_started = asyncio.Event()

    async def first(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.wait_for(second_started.wait(), 10)
        return ToolResult("first finished")

    async def second(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        second_started.set()
        return ToolResult("second finished")

    tools = [
        Tool(name, name, {"type": "object"}, fn)
        for name, fn in (("first", first), ("second", second))
    ]
    both = AssistantMessage(tool_calls=(ToolCall("c1", "first", {}), ToolCall("c2", "second", {})))
    model = ScriptedModel([both, text("done")])
    events = run(make_runner(model, ToolRegistry(tools)))
    results = [e for e in events if isinstance(e, ToolCallResult)]
    # `second` finished first, yet the results keep the order the calls were issued in
    assert [(r.call.id, r.content, r.is_error) for r in results] == [
        ("c1", "first finished", False),
        ("c2", "second finished", False),
    ]
    sent = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.content) for m in sent] == [
        ("c1", "first finished"),
        ("c2", "second finished"),
    ]


def test_max_turns_ends_the_run_with_a_clear_event() -> None:
    model = ScriptedModel([tool_call("echo")] * 3)
    events = run(make_runner(model, ToolRegistry([make_tool("echo")]), max_turns=3))
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.reason == "max_turns"
    assert end.turns == 3
    assert "max_turns" in end.message
    model.assert_consumed()


def test_the_default_limit_is_fifty_turns() -> None:
    model = ScriptedModel([text("hi")])
    assert make_runner(model, ToolRegistry()).max_turns == 50


def test_event_stream_of_a_turn_with_a_tool_call() -> None:
    model = ScriptedModel([tool_call("echo", a=1), text("all done")])
    events = run(make_runner(model, ToolRegistry([make_tool("echo")])))
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "RunStart"
    assert kinds[1:6] == [
        "TurnStart",
        "UsageEvent",
        "ToolCallProposed",
        "ToolCallResult",
        "TurnEnd",
    ]
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"
    assert events[-1].text == "all done"
    assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == "all done"
    assert sum(isinstance(e, TurnStart) for e in events) == 2
    assert all(isinstance(e.to_dict(), dict) for e in events)
    usage = [e for e in events if isinstance(e, UsageEvent)]
    assert len(usage) == 2


def test_unknown_tool_and_malformed_arguments_become_error_results_and_the_run_continues() -> None:
    bad = AssistantMessage(
        tool_calls=(
            ToolCall("c1", "nope", {}),
            ToolCall("c2", "echo", None, raw_arguments='{"a": ', arguments_error="unterminated"),
        )
    )
    calls: list[str] = []
    model = ScriptedModel([bad, text("recovered")])
    events = run(make_runner(model, ToolRegistry([make_tool("echo", calls=calls)])))
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert [r.is_error for r in results] == [True, True]
    assert "no tool named `nope`" in results[0].content and "echo" in results[0].content
    assert "not a JSON object" in results[1].content
    assert not results[1].executed and calls == []
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"


def test_a_tool_that_raises_returns_an_error_result() -> None:
    async def broken(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        raise ValueError("kaput")

    model = ScriptedModel([tool_call("broken"), text("ok")])
    events = run(
        make_runner(model, ToolRegistry([Tool("broken", "b", {"type": "object"}, broken)]))
    )
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.is_error and "ValueError: kaput" in result.content
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"


def test_cancelling_mid_tool_keeps_the_conversation_valid() -> None:
    async def hang(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(30)
        return ToolResult("never")

    model = ScriptedModel([tool_call("hang"), text("second prompt answered")])
    runner = make_runner(model, ToolRegistry([Tool("hang", "h", {"type": "object"}, hang)]))

    async def scenario() -> list[Any]:
        async def first() -> None:
            async for _ in runner.run("first"):
                pass

        task = asyncio.create_task(first())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [event async for event in runner.run("second")]

    events = asyncio.run(scenario())
    assert isinstance(events[-1], RunEnd) and events[-1].text == "second prompt answered"
    sent = model.requests[1].messages
    cancelled = [m for m in sent if isinstance(m, ToolResultMessage)]
    assert len(cancelled) == 1 and cancelled[0].is_error and "cancelled" in cancelled[0].content


def test_function_model_sees_the_live_registry_schemas() -> None:
    seen: list[list[str]] = []

    def answer(request: ModelRequest) -> AssistantMessage:
        seen.append([t.name for t in request.tools])
        return AssistantMessage(text="fine")

    registry = ToolRegistry([make_tool("a"), make_tool("b")])
    events = run(make_runner(FunctionModel(answer), registry))
    assert seen == [["a", "b"]]
    assert isinstance(events[-2], TurnEnd) and isinstance(events[-1], RunEnd)
