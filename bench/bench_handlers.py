"""What bounding extension handlers costs per event, at growing numbers of handlers.

Every handler has `limits.hook_timeout` and is abandoned when late (issue 11), so
plain handlers run in a worker thread and coroutine handlers as tasks; issue 21 made
the common path cheaper (a coroutine's first step runs at once, the loop waits in
place for a quick plain handler, a notification is not waited for). Baselines in the
same run: calling the same handlers inline (unbounded), and, with `--before REV`, the
`HandlerCaller` of that git revision, interleaved with today's round by round in one
process, so the machine's load moves both alike.

Cases per N handlers: one `context` event (plain, then coroutines), and a
notification followed by an event that waits for it (`turn_start` then `context`,
plain), as a turn has them.

Run: `python bench/bench_handlers.py [--before REV] [--rounds 7]`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from _timing import report, source_tree

from assembler.extensions import calls as current

COUNTS = [1, 10, 100, 1000]


class _Chain:
    def argument(self) -> Any:
        return None

    def accept(self, extension: str, result: Any) -> bool:
        return False


def plain(event: Any) -> None:
    return None


async def coroutine(event: Any) -> None:
    return None


def load_calls(tree: Path) -> ModuleType:
    """`extensions/calls.py` of another source tree, beside today's (its imports,
    `assembler.extensions.api`, are today's: the API did not change)."""
    spec = importlib.util.spec_from_file_location(
        "bench_calls_before", tree / "assembler" / "extensions" / "calls.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def per_event(dispatch: Callable[[], Awaitable[None]], events: int) -> tuple[float, float]:
    """(wall, CPU of every thread) seconds per call of `dispatch`."""
    for _ in range(20):
        await dispatch()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(events):
        await dispatch()
    return (time.perf_counter() - start) / events, (time.process_time() - cpu) / events


def cases(module: ModuleType, count: int) -> dict[str, Callable[[], Awaitable[None]]]:
    caller = module.HandlerCaller(10.0)
    plains = [module.Subscription(f"e{i}", plain) for i in range(count)]
    coroutines = [module.Subscription(f"e{i}", coroutine) for i in range(count)]
    notifies = hasattr(caller, "notify")

    async def one_plain() -> None:
        await caller.run("context", plains, _Chain())

    async def one_coroutine() -> None:
        await caller.run("context", coroutines, _Chain())

    async def notified_then_event() -> None:
        if notifies:  # today: not waited for; the next event settles it
            await caller.notify("turn_start", plains, None)
        else:
            await caller.run("turn_start", plains, _Chain())
        await caller.run("context", plains, _Chain())

    return {
        "plain": one_plain,
        "coroutines": one_coroutine,
        "turn_start + context, plain": notified_then_event,
    }


def inline_cases(count: int) -> dict[str, Callable[[], Awaitable[None]]]:
    async def one_plain() -> None:
        for _ in range(count):
            plain(None)

    async def one_coroutine() -> None:
        for _ in range(count):
            await coroutine(None)

    async def two_plain() -> None:
        for _ in range(2 * count):
            plain(None)

    return {
        "plain": one_plain,
        "coroutines": one_coroutine,
        "turn_start + context, plain": two_plain,
    }


async def measure(
    count: int, trees: dict[str, ModuleType], rounds: int
) -> dict[tuple[str, str], tuple[float, float]]:
    events = max(20, 2000 // count)
    runs = {name: cases(module, count) for name, module in trees.items()}
    runs["inline"] = inline_cases(count)
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for name, dispatches in runs.items():
            for case, dispatch in dispatches.items():
                samples.setdefault((name, case), []).append(await per_event(dispatch, events))
    return {
        key: (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
        for key, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-handlers-") as scratch:
        trees: dict[str, ModuleType] = {"now": current}
        if args.before:
            trees["before"] = load_calls(source_tree(args.before, Path(scratch)))
        rows = []
        for count in COUNTS:
            figures = asyncio.run(measure(count, trees, args.rounds))
            for case in ("plain", "coroutines", "turn_start + context, plain"):
                inline = figures[("inline", case)][0]
                parts = [f"inline {inline * 1e6:8.1f} µs"]
                for name in trees:
                    wall, cpu = figures[(name, case)]
                    parts.append(f"{name} {wall * 1e6:8.1f} µs (CPU {cpu * 1e6:7.1f})")
                if "before" in trees:
                    ratio = figures[("now", case)][0] / figures[("before", case)][0]
                    parts.append(f"now/before {ratio:.2f}x")
                rows.append((f"{count:>5} handlers, {case}", " | ".join(parts)))
    report("one event to N no-op handlers (median wall per event; CPU of all threads)", rows)


if __name__ == "__main__":
    main()
