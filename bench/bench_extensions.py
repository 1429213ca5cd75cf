"""What no-op extensions add to a turn with one tool call, at 1, 5 and 50 extensions.

Each extension has five no-op plain handlers (tool_call, tool_result, context,
turn_start, turn_end: every event of a turn). Baseline: the same agent without
extensions, measured in the same run, alternating. Target (issues 5, 21): under
100 µs added per turn at five extensions.

With `--before REV`, the package as of that git revision is measured too, each tree
in processes of its own, alternating (`python -S -m`-style imports, see
`_timing.tree_command`), so the change shows against the code it replaced.

Run: `python bench/bench_extensions.py [--extensions 1,5,50] [--rounds 5] [--before REV]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

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


def per_turn(path: Path, turns: int = TURNS) -> tuple[float, float]:
    """Seconds per turn: wall time, and CPU time of the whole process (every thread),
    which a loaded machine moves far less."""
    from assembler.agent.build import build_agent
    from assembler.messages import AssistantMessage, ToolCall
    from assembler.testing import ScriptedModel
    from assembler.validation.load import load_manifest

    call = AssistantMessage(tool_calls=(ToolCall("c", "ls", {"path": "."}),))
    model = ScriptedModel([call] * (turns - 1) + [AssistantMessage(text="done")])
    agent = build_agent(load_manifest(path), provider=model, trust=True, record_session=False)
    agent.runner.max_turns = turns + 1

    async def go() -> tuple[float, float]:
        async with agent:
            start, cpu = time.perf_counter(), time.process_time()
            async for _ in agent.stream("go"):
                pass
            return (time.perf_counter() - start) / turns, (time.process_time() - cpu) / turns

    return asyncio.run(go())


Figures = dict[int, tuple[float, float]]
"""Extensions -> (wall, CPU) seconds per turn."""


def measure(root: Path, counts: list[int], rounds: int) -> Figures:
    """Median seconds per turn for 0 and each count of extensions, alternating."""
    paths = {n: manifest(root, n) for n in (0, *counts)}
    samples: dict[int, list[tuple[float, float]]] = {n: [] for n in paths}
    for _ in range(rounds):
        for n, path in paths.items():
            samples[n].append(per_turn(path))
    return {n: _medians(values) for n, values in samples.items()}


def _medians(values: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)


def child(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        print(json.dumps(measure(Path(scratch), args.extensions, 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--extensions", type=lambda s: [int(n) for n in s.split(",")], default=[1, 5, 50]
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if not args.before:
        with tempfile.TemporaryDirectory() as scratch:
            results: dict[str, Figures] = {
                "now": measure(Path(scratch), args.extensions, args.rounds)
            }
    else:
        results = paired(args)
    for clock, at in (("wall time", 0), ("CPU time, all threads", 1)):
        rows = []
        for tree, figures in results.items():
            base = figures[0][at]
            rows.append((f"{tree}: no extensions (baseline)", f"{base * 1e6:8.1f} µs/turn"))
            for n in args.extensions:
                value = figures[n][at]
                added = value - base
                rows.append(
                    (
                        f"{tree}: {n} no-op extension{'s' if n > 1 else ''} (5 handlers each)",
                        f"{value * 1e6:8.1f} µs/turn: +{added * 1e6:7.1f} µs "
                        f"({value / base:.2f}x; {added / n * 1e6:.1f} µs per extension)",
                    )
                )
        report(f"no-op extensions, one tool call per turn ({TURNS} turns, median; {clock})", rows)


def paired(args: argparse.Namespace) -> dict[str, Figures]:
    """Each tree in a child process per round, alternating; medians per tree."""
    with tempfile.TemporaryDirectory(prefix="bench-ext-") as scratch:
        root = Path(scratch)
        before = source_tree(args.before, root / "before")
        samples: dict[str, dict[int, list[tuple[float, float]]]] = {"now": {}, "before": {}}
        for _ in range(args.rounds):
            for name, tree in (("now", REPO), ("before", before)):
                argv, env = tree_command(tree, root / "pyc")
                script = [argv[0], "-S", "-P", __file__, "--child", "--extensions",
                          ",".join(map(str, args.extensions))]  # fmt: skip
                env["PYTHONPATH"] += f":{Path(__file__).parent}"
                done = subprocess.run(script, env=env, capture_output=True, text=True, check=True)
                for n, (wall, cpu) in json.loads(done.stdout).items():
                    samples[name].setdefault(int(n), []).append((wall, cpu))
    return {
        name: {n: _medians(values) for n, values in figures.items()}
        for name, figures in samples.items()
    }


if __name__ == "__main__":
    main()
