"""Runner overhead per turn, and `assemble run -p` as a whole process.

Targets (issue 4): with the scripted model and one tool call, the runner adds under
1 ms per turn over the provider and the tool themselves (the baseline: the same
provider stream and tool call driven by a bare loop, measured in the same run); a
whole `assemble run -p` with the scripted model within 2x of `assemble render
--dry-run` on the same manifest. Run: `python bench/bench_runner.py`.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _timing import REPO, assemble, process_medians, report

from assembler.messages import AssistantMessage, ModelRequest, ResponseDone, ToolCall, UserMessage
from assembler.prompt.provider import SystemPromptProvider
from assembler.prompt.renderer import DynamicPromptRenderer, WorkspaceView
from assembler.runner.loop import AgentRunner
from assembler.runner.parts import RunParts
from assembler.testing import ScriptedModel
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry

TURNS = 2000


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


NOOP = Tool("noop", "Does nothing.", {"type": "object"}, _noop, snippet="Do nothing")
CALL = AssistantMessage(tool_calls=(ToolCall("c", "noop", {}),))


def steps() -> list[AssistantMessage]:
    return [CALL] * (TURNS - 1) + [AssistantMessage(text="done")]


async def through_runner() -> float:
    registry = ToolRegistry([NOOP])
    prompt = SystemPromptProvider(
        DynamicPromptRenderer(), identity="Bench.", context={"a": 1}, registry=registry,
        workspace=WorkspaceView("/ws"),
    )  # fmt: skip
    runner = AgentRunner(
        provider=ScriptedModel(steps()), parts=RunParts(prompt, registry),
        tool_context=ToolContext(Path("/ws")), max_turns=TURNS + 1,
    )  # fmt: skip
    start = time.perf_counter()
    async for _ in runner.run("go"):
        pass
    return (time.perf_counter() - start) / TURNS


async def bare_loop() -> float:
    """The same model and tool work with no runner: stream, call the tool, repeat."""
    model = ScriptedModel(steps())
    context = ToolContext(Path("/ws"))
    messages: list[Any] = [UserMessage("go")]
    start = time.perf_counter()
    for _ in range(TURNS):
        request = ModelRequest("m", "prompt", tuple(messages), (NOOP.schema(),))
        done = None
        async for event in model.stream(request):
            if isinstance(event, ResponseDone):
                done = event
        assert done is not None
        for call in done.message.tool_calls:
            await NOOP.execute(dict(call.arguments or {}), context)
    return (time.perf_counter() - start) / TURNS


def per_turn() -> None:
    ours = statistics.median(asyncio.run(through_runner()) for _ in range(5))
    base = statistics.median(asyncio.run(bare_loop()) for _ in range(5))
    report(
        f"runner overhead per turn ({TURNS} turns, scripted model, one no-op tool call)",
        [
            ("baseline: bare loop (provider stream + tool call)", f"{base * 1e6:.1f} µs/turn"),
            ("AgentRunner (prompt provider, events, hooks, records)", f"{ours * 1e6:.1f} µs/turn"),
            (
                "overhead",
                f"{(ours - base) * 1e6:.1f} µs/turn (target < 1000 µs); {ours / base:.2f}x",
            ),
        ],
    )


def whole_process() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shutil.copytree(REPO / "agents", root / "agents")
        shutil.copytree(REPO / "examples", root / "examples")
        (root / "agents" / "hello.script.yaml").write_text("- text: Hello.\n")
        manifest = str(root / "agents" / "shipping-fixer.yaml")
        medians = process_medians(
            {
                "baseline: assemble render --dry-run": assemble("render", "--dry-run", manifest),
                "assemble run -p (scripted)": assemble(
                    "run",
                    manifest,
                    "--trust",
                    "--no-session",
                    "--model",
                    "scripted:hello.script.yaml",
                    "-p",
                    "hi",
                ),
            },
            cwd=root,
        )
    (base_name, base), (name, ours) = medians.items()
    report(
        "assemble run -p as a whole process (median of 15)",
        [
            (base_name, f"{base * 1000:.1f} ms"),
            (name, f"{ours * 1000:.1f} ms"),
            ("ratio", f"{ours / base:.2f}x (target <= 2x)"),
        ],
    )


if __name__ == "__main__":
    per_turn()
    whole_process()
