"""Delegation overhead: one sub-agent call, built and run to its answer.

Target (issue 15): building and running a scripted child with one turn costs under
20 ms after the first build of that child in the process, the model excluded. The
baseline is `build_agent` alone on the same child manifest (built and closed, in the
same run, with the same session setting). Each figure is the mean over 1, 10 and 100
delegations in a row, to show whether cost grows with the number of delegations.
The scripted model's own time (streaming one reply) is measured and subtracted.

Run: `python bench/bench_subagents.py`.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from _timing import report

ROUNDS = {1: 30, 10: 10, 100: 5}  # medians over rounds; fewer for the longer ones

LEAD = """\
version: 1
name: lead
identity: You delegate to `child`.
model: scripted:reply.script.yaml
workspace: work
tools:
  sets:
    - readonly
    - agent: child.yaml
"""
CHILD = """\
version: 1
name: child
description: Answers one question.
identity: You answer in one word.
model: scripted:reply.script.yaml
workspace: work
tools:
  sets: [readonly]
"""


def project(root: Path) -> Path:
    (root / "work").mkdir()
    (root / "work" / "AGENTS.md").write_text("# work\n\nA small project.\n")
    (root / "lead.yaml").write_text(LEAD)
    (root / "child.yaml").write_text(CHILD)
    (root / "reply.script.yaml").write_text("- text: done\n")
    return root / "lead.yaml"


async def delegations(root: Path, count: int, record: bool) -> list[float]:
    """Seconds of each delegation: what the tool `child(task)` does per call."""
    from assembler.agent import build_agent
    from assembler.tools.base import ToolContext

    lead = build_agent(root / "lead.yaml", session_dir=root / "sessions", record_session=record)
    (child,) = lead.subagents
    context = ToolContext(root / "work", call_id="call_1")
    await child.run("warm up", context)  # the first build of that child in the process
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        result = await child.run("Answer.", context)
        samples.append(time.perf_counter() - start)
        assert result.content == "done", result
    await lead.aclose()
    return samples


async def builds(root: Path, count: int, record: bool) -> list[float]:
    """Seconds of each `build_agent` of the child manifest, built and closed."""
    from assembler.agent import build_agent
    from assembler.validation.load import load_manifest

    manifest = load_manifest(root / "child.yaml")
    await build_agent(manifest, session_dir=root / "direct", record_session=record).aclose()
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        agent = build_agent(manifest, session_dir=root / "direct", record_session=record)
        await agent.aclose()
        samples.append(time.perf_counter() - start)
    return samples


def session_create(root: Path, count: int = 50) -> float:
    """Creating one session file (write, fsync, rename, fsync of the directory): the
    disk's share of a delegation that records its session."""
    from assembler.sessions.store import SessionStore

    store = SessionStore(root / "bare")
    start = time.perf_counter()
    for _ in range(count):
        store.create(agent="child", manifest=None, model="scripted:x")
    return (time.perf_counter() - start) / count


async def model_reply() -> float:
    """The scripted model streaming one reply: the model's part, subtracted."""
    from assembler.messages import ModelRequest, UserMessage
    from assembler.testing import ScriptedModel

    count = 2000
    model = ScriptedModel(["done"] * count)
    request = ModelRequest("m", "prompt", (UserMessage("Answer."),))
    start = time.perf_counter()
    for _ in range(count):
        async for _event in model.stream(request):
            pass
    return (time.perf_counter() - start) / count


def measure(record: bool) -> None:
    rows: list[tuple[str, str]] = []
    model = statistics.median(asyncio.run(model_reply()) for _ in range(5))
    for count, rounds in ROUNDS.items():
        ours: list[list[float]] = []
        base: list[list[float]] = []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as scratch:
                root = Path(scratch)
                project(root)
                os.environ["ASSEMBLER_DATA_DIR"] = str(root / "data")
                base.append(asyncio.run(builds(root, count, record)))
                ours.append([t - model for t in asyncio.run(delegations(root, count, record))])
        # the mean of N calls in a row (median over rounds), and the median single call
        b = statistics.median(statistics.fmean(r) for r in base)
        o = statistics.median(statistics.fmean(r) for r in ours)
        b1 = statistics.median(t for r in base for t in r)
        o1 = statistics.median(t for r in ours for t in r)
        rows.append(
            (
                f"{count:>3} delegations",
                f"build_agent alone {b * 1000:.2f} ms (median call {b1 * 1000:.2f}); "
                f"delegation {o * 1000:.2f} ms (median call {o1 * 1000:.2f}; target < 20 ms): "
                f"{o / b:.2f}x",
            )
        )
    rows.append(("scripted model, one reply (subtracted)", f"{model * 1e6:.1f} µs"))
    if record:
        with tempfile.TemporaryDirectory() as scratch:
            disk = session_create(Path(scratch))
        rows.append(("of which: creating a session file", f"{disk * 1000:.2f} ms"))
    what = "sessions recorded (the default)" if record else "no session (--no-session)"
    report(f"delegation overhead per call, mean over N calls in a row, {what}", rows)


if __name__ == "__main__":
    measure(record=True)
    measure(record=False)
