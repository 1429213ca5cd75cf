"""What bounding extension handlers costs per event, at growing numbers of handlers.

Issue 11, item 14: every handler now has `limits.hook_timeout` and is abandoned when
late, so plain handlers run in a worker thread (one trip per event, however many
handlers) and coroutine handlers each run as a task. The baseline, measured in the
same run, is the unbounded way: calling the same handlers inline, and awaiting the
same coroutines inline. Run: `python bench/bench_handlers.py`.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _timing import report

from assembler.extensions.calls import HandlerCaller, Subscription

COUNTS = [1, 10, 100, 1000]


class _Notify:
    def argument(self) -> Any:
        return None

    def accept(self, extension: str, result: Any) -> bool:
        return False


def plain(event: Any) -> None:
    return None


async def coroutine(event: Any) -> None:
    return None


async def per_event(dispatch: Callable[[], Awaitable[None]], events: int) -> float:
    for _ in range(20):
        await dispatch()
    start = time.perf_counter()
    for _ in range(events):
        await dispatch()
    return (time.perf_counter() - start) / events


async def measure(count: int) -> dict[str, float]:
    caller = HandlerCaller(10.0)
    plains = [Subscription(f"e{i}", plain) for i in range(count)]
    coroutines = [Subscription(f"e{i}", coroutine) for i in range(count)]
    chain = _Notify()
    events = max(20, 4000 // count)

    async def inline_plain() -> None:
        for subscription in plains:
            subscription.handler(chain.argument())

    async def inline_coroutines() -> None:
        for subscription in coroutines:
            await subscription.handler(chain.argument())

    async def bounded_plain() -> None:
        await caller.run("turn_start", plains, chain)

    async def bounded_coroutines() -> None:
        await caller.run("turn_start", coroutines, chain)

    samples: dict[str, list[float]] = {}
    for _ in range(5):
        for name, dispatch in [
            ("inline plain", inline_plain),
            ("bounded plain", bounded_plain),
            ("inline coroutines", inline_coroutines),
            ("bounded coroutines", bounded_coroutines),
        ]:
            samples.setdefault(name, []).append(await per_event(dispatch, events))
    return {name: statistics.median(values) for name, values in samples.items()}


if __name__ == "__main__":
    rows = []
    for count in COUNTS:
        m = asyncio.run(measure(count))
        rows.append(
            (
                f"{count:>5} handlers, plain",
                f"{m['bounded plain'] * 1e6:9.1f} µs/event, inline {m['inline plain'] * 1e6:8.1f} µs"
                f" (+{(m['bounded plain'] - m['inline plain']) * 1e6:.1f} µs)",
            )
        )
        rows.append(
            (
                f"{count:>5} handlers, coroutines",
                f"{m['bounded coroutines'] * 1e6:9.1f} µs/event, inline "
                f"{m['inline coroutines'] * 1e6:8.1f} µs "
                f"({m['bounded coroutines'] / m['inline coroutines']:.1f}x)",
            )
        )
    report("one event to N no-op handlers: bounded (issue 11) vs called inline", rows)
