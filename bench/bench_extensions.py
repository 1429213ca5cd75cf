"""What five no-op extensions add to a turn with one tool call.

Target (issue 5): under 100 µs added per turn, against the same agent without
extensions measured in the same run. Run: `python bench/bench_extensions.py`.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from _timing import report

from assembler.agent.build import build_agent
from assembler.messages import AssistantMessage, ToolCall
from assembler.testing import ScriptedModel
from assembler.validation.load import load_manifest

TURNS = 2000
NOOP_EXTENSION = """
def setup(api, options):
    @api.on("tool_call")
    def allow(event):
        return None

    @api.on("tool_result")
    def keep(event):
        return None

    @api.on("context")
    def same(messages):
        return None

    @api.on("turn_start")
    def started(event):
        pass

    @api.on("turn_end")
    def ended(event):
        pass
"""


def manifest(root: Path, extensions: int) -> Path:
    (root / "ws").mkdir(exist_ok=True)
    (root / "ws" / "a.txt").write_text("x\n")
    lines = ["version: 1", f"name: bench-{extensions}", "identity: Bench.", "workspace: ws",
             "tools:", "  sets: [ls]"]  # fmt: skip
    if extensions:
        lines.append("extensions:")
        for i in range(extensions):
            (root / f"noop{i}.py").write_text(textwrap.dedent(NOOP_EXTENSION))
            lines.append(f"  - path: noop{i}.py")
    path = root / f"agent-{extensions}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def per_turn(path: Path) -> float:
    call = AssistantMessage(tool_calls=(ToolCall("c", "ls", {"path": "."}),))
    model = ScriptedModel([call] * (TURNS - 1) + [AssistantMessage(text="done")])
    agent = build_agent(load_manifest(path), provider=model, trust=True, record_session=False)
    agent.runner.max_turns = TURNS + 1

    async def go() -> float:
        async with agent:
            start = time.perf_counter()
            async for _ in agent.stream("go"):
                pass
            return (time.perf_counter() - start) / TURNS

    return asyncio.run(go())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        plain, five = manifest(root, 0), manifest(root, 5)
        samples = [(per_turn(plain), per_turn(five)) for _ in range(5)]
    base = statistics.median(s[0] for s in samples)
    ours = statistics.median(s[1] for s in samples)
    report(
        f"five no-op extensions, one tool call per turn ({TURNS} turns)",
        [
            ("baseline: no extensions", f"{base * 1e6:.1f} µs/turn"),
            (
                "five no-op extensions (tool_call, tool_result, context, turn_start, turn_end)",
                f"{ours * 1e6:.1f} µs/turn",
            ),
            ("added", f"{(ours - base) * 1e6:.1f} µs/turn (target < 100 µs); {ours / base:.2f}x"),
        ],
    )
