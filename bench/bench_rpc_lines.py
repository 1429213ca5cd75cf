"""How `assemble rpc` reads long request lines: linear in the line's size.

Issue 11, item 16: one 64 MB line took 32 s, because every 64 KiB chunk re-copied
everything buffered before it. The reader is measured on a real pipe at growing line
sizes (16 KiB to 16 MiB, the limit), against the baseline of reading the same bytes
from the same kind of pipe with `os.read` and nothing else, in the same run; the
quadratic splitting it replaced is measured too. Run: `python bench/bench_rpc_lines.py`.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import IO

from _timing import report

from assembler.rpc import MAX_LINE_BYTES, Input, read_lines

SIZES = [16 * 1024, 160 * 1024, 1600 * 1024, MAX_LINE_BYTES]


def _pipe(data: bytes) -> IO[bytes]:
    """The read end of a pipe that a thread fills with `data`, then closes."""
    read_fd, write_fd = os.pipe()

    def fill() -> None:
        with os.fdopen(write_fd, "wb") as sink:
            sink.write(data)

    threading.Thread(target=fill, daemon=True).start()
    return os.fdopen(read_fd, "rb")


def through_reader(data: bytes) -> float:
    async def go() -> float:
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()
        sizes: list[int] = []

        def deliver(line: Input) -> None:
            if line is None:
                finished.set_result(None)
            elif isinstance(line, bytes | str):
                sizes.append(len(line))

        with _pipe(data) as source:
            start = time.perf_counter()
            read_lines(source, loop, deliver)  # type: ignore[arg-type]
            await finished
            elapsed = time.perf_counter() - start
        assert sizes == [len(data) - 1], sizes
        return elapsed

    return asyncio.run(go())


def _drain(data: bytes, split: Callable[[bytes, bytes], bytes]) -> float:
    with _pipe(data) as source:
        fd = source.fileno()
        pending = b""
        start = time.perf_counter()
        while chunk := os.read(fd, 65536):
            pending = split(pending, chunk)
        return time.perf_counter() - start


def raw_read(data: bytes) -> float:
    """Baseline: read the bytes and keep them, nothing else."""
    parts: list[bytes] = []

    def keep(pending: bytes, chunk: bytes) -> bytes:
        parts.append(chunk)
        return pending

    return _drain(data, keep)


def quadratic(data: bytes) -> float:
    """The splitting the reader used before: `(pending + chunk).split(b"\\n")`."""

    def split(pending: bytes, chunk: bytes) -> bytes:
        *_, rest = (pending + chunk).split(b"\n")
        return rest

    return _drain(data, split)


def median(function: Callable[[bytes], float], data: bytes, runs: int) -> float:
    return statistics.median(function(data) for _ in range(runs))


if __name__ == "__main__":
    rows = []
    for size in SIZES:
        data = b"x" * size + b"\n"
        runs = 9 if size < MAX_LINE_BYTES else 5
        base, ours = median(raw_read, data, runs), median(through_reader, data, runs)
        old = median(quadratic, data, 3)
        row = (
            f"{ours * 1e3:8.2f} ms, {ours / base:5.2f}x the baseline ({base * 1e3:.2f} ms); "
            f"before the fix {old * 1e3:.2f} ms ({old / base:.1f}x)"
        )
        rows.append((f"one line of {size / 1024:,.0f} KiB", row))
    report("assemble rpc: reading one long line from a pipe", rows)
