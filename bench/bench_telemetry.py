"""What OpenTelemetry spans cost a run, per turn (issue 16).

One turn = one `chat` request to the scripted model and one `execute_tool` call of a
no-op tool. Four runners in the same run, at 10, 100 and 1,000 turns:

- baseline: no telemetry (what an install without `opentelemetry-api` runs: nothing
  is wrapped);
- API only: the wrappers with the API's default no-op tracer (the API installed, no
  SDK: the common case, since `mcp` and `anthropic` depend on the API);
- SDK: a real `TracerProvider` exporting to memory, every span recorded;
- SDK + content: the same with `ASSEMBLER_OTEL_CONTENT=1` (messages serialised to
  JSON on every request; grows with the conversation).

Run: `python bench/bench_telemetry.py`.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _timing import report
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from assembler.messages import AssistantMessage, ToolCall
from assembler.runner.hooks import NoHooks
from assembler.runner.loop import AgentRunner, RunParts
from assembler.telemetry import AgentTelemetry, wrap_hooks, wrap_provider
from assembler.testing import ScriptedModel
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


NOOP = Tool("noop", "Does nothing.", {"type": "object"}, _noop, snippet="Do nothing")
CALL = AssistantMessage(tool_calls=(ToolCall("c", "noop", {}),))


def runner(turns: int, telemetry: AgentTelemetry | None) -> AgentRunner:
    steps = [CALL] * (turns - 1) + [AssistantMessage(text="done")]
    registry = ToolRegistry([NOOP])
    provider = ScriptedModel(steps)
    hooks = NoHooks()
    parts = RunParts(
        lambda: "## identity\nBench.",
        registry,
        hooks if telemetry is None else wrap_hooks(hooks, telemetry),
    )
    return AgentRunner(
        provider=provider if telemetry is None else wrap_provider(provider, telemetry),
        parts=parts,
        tool_context=ToolContext(Path("/ws")),
        max_turns=turns + 1,
    )


async def per_turn(turns: int, telemetry: AgentTelemetry | None) -> float:
    subject = runner(turns, telemetry)
    start = time.perf_counter()
    async for _ in subject.run("go"):
        pass
    return (time.perf_counter() - start) / turns


def telemetry(content: bool = False) -> AgentTelemetry:
    made = AgentTelemetry.create(
        agent_name="bench", provider_name="scripted", model="bench",
        env={"ASSEMBLER_OTEL_CONTENT": "1" if content else ""},
    )  # fmt: skip
    assert made is not None, "opentelemetry-api is not installed"
    return made


def use_sdk() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # a benchmark sets it more than once
    trace._TRACER_PROVIDER = None
    trace.set_tracer_provider(provider)
    return exporter


def measure(turns: int, make: Any, repeat: int) -> float:
    return statistics.median(asyncio.run(per_turn(turns, make())) for _ in range(repeat))


def main() -> None:
    for turns in (10, 100, 1000):
        repeat = max(5, 3000 // turns)
        trace._TRACER_PROVIDER_SET_ONCE = Once()
        trace._TRACER_PROVIDER = None  # the API's own no-op tracer
        base = measure(turns, lambda: None, repeat)
        api = measure(turns, telemetry, repeat)
        exporter = use_sdk()
        sdk = measure(turns, telemetry, repeat)
        spans = len(exporter.get_finished_spans())
        exporter.clear()
        content = measure(turns, lambda: telemetry(content=True), repeat)
        exporter.clear()
        report(
            f"per turn, {turns} turns (one chat + one execute_tool span each; median of {repeat})",
            [
                ("baseline: no telemetry", f"{base * 1e6:.1f} µs"),
                ("API only (no-op tracer)", f"{api * 1e6:.1f} µs: +{(api - base) * 1e6:.1f} µs"),
                (
                    "SDK, in-memory exporter",
                    f"{sdk * 1e6:.1f} µs: +{(sdk - base) * 1e6:.1f} µs ({spans // repeat} spans/run)",
                ),
                (
                    "SDK + ASSEMBLER_OTEL_CONTENT=1",
                    f"{content * 1e6:.1f} µs: +{(content - base) * 1e6:.1f} µs",
                ),
            ],
        )


if __name__ == "__main__":
    main()
