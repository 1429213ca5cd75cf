"""Sessions: resuming a long session, and the runner's cost per turn as a run grows.

Targets (issue 13): resuming a 5,000-entry session under 100 ms, against a plain
`json.loads` of each line of the same file (the floor of reading it at all); the
runner's cost per turn flat from 10 to 5,000 turns (a request that copied or
re-encoded the whole history every turn would grow with it). Run:
`python bench/bench_sessions.py`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _timing import median_seconds, report

from assembler.agent.conversation import restore
from assembler.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from assembler.prompt.provider import SystemPromptProvider
from assembler.prompt.renderer import DynamicPromptRenderer, WorkspaceView
from assembler.runner.loop import AgentRunner
from assembler.runner.parts import RunParts
from assembler.sessions.store import Session, SessionStore
from assembler.testing import ScriptedModel
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry


def write_session(directory: Path, entries: int) -> Path:
    session = SessionStore(directory).create("bench", None, "scripted:bench")
    for index in range(entries // 3):
        session.append_message(UserMessage(f"question {index}: " + "words " * 20))
        call = ToolCall(f"c{index}", "read", {"path": f"file{index}.txt"})
        session.append_message(AssistantMessage("Reading.", (call,)), usage=Usage(100, 20))
        session.append_message(ToolResultMessage(call.id, "read", "contents " * 40))
    return session.path


def resume(sizes: tuple[int, ...] = (50, 500, 5000)) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            path = write_session(Path(scratch) / str(size), size)

            def floor(path: Path = path) -> None:
                with path.open("rb") as handle:
                    for line in handle:
                        json.loads(line)

            def ours(path: Path = path, size: int = size) -> None:
                restored = restore(Session.load(path))
                assert len(restored.messages) >= size // 3 * 3 - 3

            base = median_seconds(floor, repeat=15, warmup=2)
            mine = median_seconds(ours, repeat=15, warmup=2)
            rows.append(
                (
                    f"{size:>5} entries",
                    f"{mine * 1e3:7.1f} ms  (json.loads of each line {base * 1e3:6.1f} ms; "
                    f"{mine / base:.2f}x; {mine / size * 1e6:.1f} µs/entry)",
                )
            )
    report("resuming a session (Session.load + restore: the conversation to send)", rows)


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


NOOP = Tool("noop", "Does nothing.", {"type": "object"}, _noop, snippet="Do nothing")
CALL = AssistantMessage(tool_calls=(ToolCall("c", "noop", {}),))


async def turns(total: int) -> list[float]:
    """Seconds of each turn of one run of `total` turns (scripted model, one no-op
    tool call per turn)."""
    registry = ToolRegistry([NOOP])
    prompt = SystemPromptProvider(
        DynamicPromptRenderer(), identity="Bench.", context={"a": 1}, registry=registry,
        workspace=WorkspaceView("/ws"),
    )  # fmt: skip
    steps = [CALL] * (total - 1) + [AssistantMessage(text="done")]
    runner = AgentRunner(
        provider=ScriptedModel(steps), parts=RunParts(prompt, registry),
        tool_context=ToolContext(Path("/ws")), max_turns=total + 1,
    )  # fmt: skip
    marks: list[float] = []
    async for event in runner.run("go"):
        if type(event).__name__ == "TurnStart":
            marks.append(time.perf_counter())
    marks.append(time.perf_counter())
    return [b - a for a, b in itertools.pairwise(marks)]


def per_turn(sizes: tuple[int, ...] = (10, 100, 1000, 5000)) -> None:
    rows = []
    first: float | None = None
    for size in sizes:
        runs = [asyncio.run(turns(size)) for _ in range(3)]
        # the last tenth of the turns with a tool call (the very last turn only answers)
        tail = [statistics.median(r[-max(1, size // 10) - 1 : -1]) for r in runs]
        late = statistics.median(tail)
        first = first or late
        rows.append(
            (
                f"turn {size:>5} of a run",
                f"{late * 1e6:7.1f} µs/turn  ({late / first:.2f}x the turns of a 10-turn run)",
            )
        )
    report(
        "runner cost per turn as the conversation grows (median of the last tenth)",
        rows,
    )


if __name__ == "__main__":
    resume()
    per_turn()
