"""What no-op extensions add to a turn with one tool call, at 1, 5 and 50 extensions,
and at conversations of 10, 100 and 1,000 messages.

Each extension has five no-op plain handlers (tool_call, tool_result, context,
turn_start, turn_end: every event of a turn). Baseline: the same agent without
extensions, measured in the same process, alternating; the cost added is taken per
round (a pair measured together), then its median and its spread (lowest-highest)
over the rounds. Target (issues 5, 21): under 100 µs added per turn at five
extensions, and a cost that does not grow with the conversation.

Two tables: a run of 1,000 turns from an empty conversation (as measured since issue
5; the conversation grows to 2,000 messages), and `HISTORY_TURNS` turns after the
conversation was filled with 10, 100 and 1,000 messages (`--history`), `CHUNKS` runs
per case and round, each beside a run of its baseline.

With `--before REV`, the package as of that git revision is measured too, each tree
in processes of its own, alternating (`python -S -m`-style imports, see
`_timing.tree_command`), so the change shows against the code it replaced.

Run: `python bench/bench_extensions.py [--extensions 1,5,50] [--history 10,100,1000]
[--rounds 5] [--before REV]`. CPU time (every thread of the process) is the figure
to read on a shared machine; wall time is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _timing import REPO, report, source_tree, tree_command

TURNS = 1000
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


def build(path: Path, turns: int, history: int = 0) -> Any:
    """An agent whose scripted model answers `turns` times (a tool call each, then a
    text), its conversation already holding `history` messages."""
    from assembler.agent.build import build_agent
    from assembler.messages import AssistantMessage, ToolCall, UserMessage
    from assembler.testing import ScriptedModel
    from assembler.validation.load import load_manifest

    call = AssistantMessage(tool_calls=(ToolCall("c", "ls", {"path": "."}),))
    model = ScriptedModel([call] * (turns - 1) + [AssistantMessage(text="done")])
    agent = build_agent(load_manifest(path), provider=model, trust=True, record_session=False)
    agent.runner.max_turns = turns + 1
    agent.runner.messages = [
        UserMessage(f"question {i}") if i % 2 == 0 else AssistantMessage(text=f"answer {i}")
        for i in range(history)
    ]
    return agent


def per_turn(agent: Any, turns: int) -> tuple[float, float]:
    """Seconds per turn of one run of `agent`: wall time, and CPU time of the whole
    process (every thread), which a loaded machine moves far less."""

    async def go() -> tuple[float, float]:
        async with agent:
            start, cpu = time.perf_counter(), time.process_time()
            async for _ in agent.stream("go"):
                pass
            return (time.perf_counter() - start) / turns, (time.process_time() - cpu) / turns

    return asyncio.run(go())


def dispatch_per_turn(agent: Any, turns: int, history: int) -> tuple[float, float]:
    """Seconds per turn of the agent's hooks alone, called as the runner calls them in
    a turn with one tool call (turn_start, context, tool_call, tool_result, turn_end),
    the conversation growing by two messages a turn from `history`: what extensions
    add, without the runner's and the tool's own cost (and noise) around it."""
    from assembler.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
    from assembler.tools.base import ToolResult

    hooks = agent.runner.parts.hooks
    messages: list[Any] = [UserMessage(f"question {i}") for i in range(history)]
    call = ToolCall("c", "ls", {"path": "."})
    reply = AssistantMessage(tool_calls=(call,))
    result = ToolResult("a.txt\n", details={"entries": 1})

    async def go() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for turn in range(turns):
            await hooks.on_turn_start(turn)
            await hooks.transform_context(messages)
            await hooks.before_tool_call(call)
            await hooks.after_tool_result(call, result)
            messages.append(reply)
            messages.append(ToolResultMessage("c", "ls", "a.txt\n"))
            await hooks.on_turn_end(turn, reply)
        await hooks.on_run_end("done")
        return (time.perf_counter() - start) / turns, (time.process_time() - cpu) / turns

    return asyncio.run(go())


HISTORY_TURNS = 100
"""Turns per measured run after the conversation was filled (it grows by 200 messages)."""
CHUNKS = 5
"""Runs per case and round in the history table, each case's run beside its baseline's."""
DISPATCH_TURNS = 500
"""Turns per run of the hooks alone."""

Samples = dict[str, list[tuple[float, float]]]
"""Case ("n" extensions, or "n@h": n extensions after h messages) -> (wall, CPU)
seconds per turn, one pair per run."""


def one_round(root: Path, counts: list[int], histories: list[int]) -> Samples:
    """Every case in this process, each run beside its baseline's, after a short run of
    each (what a process does once, its imports, is no turn's cost)."""
    paths = {n: manifest(root, n) for n in (0, *counts)}
    for path in paths.values():
        per_turn(build(path, 20, 10), 20)
    figures: Samples = {str(n): [per_turn(build(path, TURNS), TURNS)] for n, path in paths.items()}
    agents = {n: build(path, 2) for n, path in paths.items()}
    for h in histories:
        for _ in range(CHUNKS):
            for n, path in paths.items():
                agent = build(path, HISTORY_TURNS, h)
                figures.setdefault(f"{n}@{h}", []).append(per_turn(agent, HISTORY_TURNS))
                gc.collect()
                turns = DISPATCH_TURNS
                figures.setdefault(f"hooks {n}@{h}", []).append(
                    dispatch_per_turn(agents[n], turns, h)
                )
    return figures


def child(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        print(json.dumps(one_round(Path(scratch), args.extensions, args.history)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    numbers = lambda s: [int(n) for n in s.split(",") if n]  # noqa: E731
    parser.add_argument("--extensions", type=numbers, default=[1, 5, 50])
    parser.add_argument("--history", type=numbers, default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    results = rounds(args)
    for clock, at in (("CPU time, all threads", 1), ("wall time", 0)):
        rows = []
        for tree, samples in results.items():
            rows.append((f"{tree}: no extensions (baseline)", _value(samples["0"], at)))
            for n in args.extensions:
                rows.append((f"{tree}: {n} no-op extension{'s' if n > 1 else ''} (5 handlers each)",
                             _added(samples[str(n)], samples["0"], at, n)))  # fmt: skip
        report(f"no-op extensions, one tool call per turn ({TURNS} turns; {clock})", rows)
        if not args.history:
            continue
        titles = {
            "": f"the same after a conversation of N messages ({HISTORY_TURNS} turns; {clock})",
            "hooks ": f"the hooks alone, as a turn calls them ({DISPATCH_TURNS} turns; {clock})",
        }
        for kind, title in titles.items():
            report(title, _history_rows(results, kind, args.history, args.extensions, at))


def _history_rows(
    results: dict[str, Samples],
    kind: str,
    history: list[int],
    extensions: list[int],
    at: int,
) -> list[tuple[str, str]]:
    """One table's rows along the history axis: `kind` is the samples' prefix."""
    rows = []
    for tree, samples in results.items():
        for h in history:
            base = samples[f"{kind}0@{h}"]
            rows.append((f"{tree}: {h} messages, no extensions (baseline)", _value(base, at)))
            for n in extensions:
                rows.append((f"{tree}: {h} messages, {n} extensions",
                             _added(samples[f"{kind}{n}@{h}"], base, at, n)))  # fmt: skip
    return rows


def _value(samples: list[tuple[float, float]], at: int) -> str:
    values = [s[at] * 1e6 for s in samples]
    low, high = _quartiles(values)
    return f"{statistics.median(values):8.1f} µs/turn (quartiles {low:.1f}-{high:.1f})"


def _added(samples: list[tuple[float, float]], base: list[tuple[float, float]], at: int,
           n: int) -> str:  # fmt: skip
    """The median of the per-round differences (each pair measured together), its
    spread, and the ratio of the medians."""
    added = [(s[at] - b[at]) * 1e6 for s, b in zip(samples, base, strict=True)]
    value = statistics.median(s[at] for s in samples)
    middle = statistics.median(added)
    low, high = _quartiles(added)
    return (f"{value * 1e6:8.1f} µs/turn: {middle:+7.1f} µs (quartiles {low:+.1f} to "
            f"{high:+.1f} over {len(added)} pairs; "
            f"{value / statistics.median(b[at] for b in base):.2f}x; "
            f"{middle / n:.1f} µs per extension)")  # fmt: skip


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 4:
        return min(values), max(values)
    quartiles = statistics.quantiles(values, n=4)
    return quartiles[0], quartiles[2]


def rounds(args: argparse.Namespace) -> dict[str, Samples]:
    """Each tree in a child process per round, alternating: one sample per case per
    round and tree."""
    with tempfile.TemporaryDirectory(prefix="bench-ext-") as scratch:
        root = Path(scratch)
        trees = {"now": REPO}
        if args.before:
            trees["before"] = source_tree(args.before, root / "before")
        samples: dict[str, Samples] = {name: {} for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                argv, env = tree_command(tree, root / "pyc")
                script = [argv[0], "-S", "-P", __file__, "--child", "--extensions",
                          ",".join(map(str, args.extensions)), "--history",
                          ",".join(map(str, args.history))]  # fmt: skip
                env["PYTHONPATH"] += f":{Path(__file__).parent}"
                done = subprocess.run(script, env=env, capture_output=True, text=True, check=True)
                for case, figures in json.loads(done.stdout).items():
                    samples[name].setdefault(case, []).extend(map(tuple, figures))
    return samples


if __name__ == "__main__":
    main()
