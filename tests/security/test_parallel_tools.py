"""Issue 11, item 17: 200 tool calls in one assistant message no longer all start at once.

The runner runs the calls of one message concurrently but at most
`limits.max_parallel_tools` (default 8) at a time; results still go back in the order
the model issued the calls. Checked with a tool that counts how many copies of itself
are running, and with real `bash` processes.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from procs import live_processes_with

from assembler import build_agent, load_manifest
from assembler.runner.events import ToolCallResult
from assembler.runner.loop import AgentRunner, RunParts
from assembler.testing import ScriptedModel, reply, text, tool_call
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry


class Gauge:
    def __init__(self) -> None:
        self.running = 0
        self.peak = 0

    def tool(self) -> Tool:
        async def execute(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            self.running += 1
            self.peak = max(self.peak, self.running)
            try:
                # Later calls finish first, so the order of results is really tested.
                await asyncio.sleep(0.002 * (200 - int(arguments["n"])) / 20)
            finally:
                self.running -= 1
            return ToolResult(f"call {arguments['n']}")

        return Tool("work", "Work.", {"type": "object"}, execute)


def run_calls(count: int, **runner_options: Any) -> tuple[Gauge, list[str]]:
    gauge = Gauge()
    model = ScriptedModel([reply(*(tool_call("work", n=n) for n in range(count))), text("ok")])
    runner = AgentRunner(
        provider=model,
        parts=RunParts(lambda: "## identity\nA test agent.", ToolRegistry([gauge.tool()])),
        tool_context=ToolContext(workspace=Path.cwd()),
        **runner_options,
    )

    async def go() -> list[str]:
        return [e.content async for e in runner.run("go") if isinstance(e, ToolCallResult)]

    return gauge, asyncio.run(go())


def test_two_hundred_calls_run_eight_at_a_time_in_order() -> None:
    gauge, results = run_calls(200)
    assert gauge.peak == 8
    assert results == [f"call {n}" for n in range(200)]


def test_the_cap_is_the_runners_setting() -> None:
    assert run_calls(50, max_parallel_tools=3)[0].peak == 3
    assert run_calls(50, max_parallel_tools=1)[0].peak == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_limits_max_parallel_tools_caps_real_bash_commands(tmp_path: Path) -> None:
    # 40 `bash` calls in one message, each sleeping until a file appears: while they
    # wait, count the `sleep` processes. The manifest allows 4 at a time.
    digits = f"{uuid.uuid4().int % 10**9:09d}"
    seconds = f"400.{digits}"  # only the `sleep` has this on its command line, not bash
    go = tmp_path / "go"
    command = f"A=400; sleep $A.{digits} & while [ ! -e {go} ]; do sleep 0.02; done; kill %1"
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: many\nidentity: Test.\n"
        "tools: {sets: [bash]}\nlimits: {max_parallel_tools: 4}\n"
    )
    model = ScriptedModel([reply(*(tool_call("bash", command=command) for _ in range(40))), "ok"])
    agent = build_agent(
        load_manifest(tmp_path / "agent.yaml"), provider=model, record_session=False
    )
    peak = 0

    async def watch() -> None:
        nonlocal peak
        for _ in range(300):
            peak = max(peak, len(live_processes_with(seconds)))
            await asyncio.sleep(0.01)
        go.touch()

    async def main() -> list[ToolCallResult]:
        async with agent:
            watcher = asyncio.ensure_future(watch())
            events = [e async for e in agent.stream("go") if isinstance(e, ToolCallResult)]
            await watcher
            return events

    events = asyncio.run(main())
    assert peak == 4
    assert len(events) == 40 and not any(e.is_error for e in events)
    assert live_processes_with(seconds) == []
