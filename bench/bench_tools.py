"""The built-in tools after the issue 11 hardening: what the safety costs.

- `read` streams (item 7): time and peak memory at 10, 100 and 1,000 MB against a
  `wc -l`-like baseline in the same process (read in chunks, count newlines), and the
  old whole-file read where memory allows.
- `bash` runs under a supervisor process (item 11): a `true` command through the tool
  against `bash -c true` started directly with asyncio.
- `grep` and `find` search in a worker process (item 13), kept between calls (issue 21):
  against the same search run in-process, on trees of 10, 100 and 1,000 files; and
  with a fresh worker started for every call, as before issue 21.
- `edit` answers a repetitive `old_text` in linear time (item 10): 10 K to 1 M
  characters against `str.count` on the same text.

Run: `python bench/bench_tools.py` (`--quick` skips the 1,000 MB file; `--only grep`
(or `read`, `bash`, `edit`) runs one section).
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _timing import report

from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.builtin.files import EDIT_TOOL, READ_TOOL
from assembler.tools.builtin.search import GREP_TOOL
from assembler.tools.builtin.search_pool import WORKERS
from assembler.tools.builtin.search_worker import grep as grep_in_process
from assembler.tools.truncate import split_lines, truncate_text

MB = 1024 * 1024
LINE = b"x" * 79 + b"\n"


def call(tool: Tool, ws: Path, **args: Any) -> ToolResult:
    async def go() -> ToolResult:
        return await tool.execute(args, ToolContext(workspace=ws, timeout=600))

    return asyncio.run(go())


def timed(function: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def paired(
    baseline: Callable[[], object], measured: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Medians of both, run alternately so the machine's load affects them alike."""
    base: list[float] = []
    tool: list[float] = []
    for _ in range(repeat):
        for function, samples in ((baseline, base), (measured, tool)):
            start = time.perf_counter()
            function()
            samples.append(time.perf_counter() - start)
    return statistics.median(base), statistics.median(tool)


def peak_bytes(function: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def count_lines(path: Path) -> int:
    """The `wc -l` baseline: read in 256 KB chunks, count newlines."""
    total = 0
    with path.open("rb", buffering=0) as handle:
        while chunk := handle.read(256 * 1024):
            total += chunk.count(b"\n")
    return total


def old_read(path: Path) -> str:
    """What `read` did before: load, decode and split the whole file."""
    lines = split_lines(path.read_bytes().decode("utf-8", "replace"))
    return truncate_text("".join(lines[:1]), 2000, 50 * 1024, keep="head").text


def bench_read(ws: Path, sizes: list[int]) -> list[tuple[str, str]]:
    rows = []
    for size in sizes:
        path = ws / f"big{size}.txt"
        with path.open("wb") as handle:
            block = LINE * (MB // len(LINE))
            for _ in range(size):
                handle.write(block)
        repeat = 5 if size <= 100 else 3
        count_lines(path)  # both start from a warm page cache
        base, tool = paired(
            lambda p=path: count_lines(p),  # type: ignore[misc]
            lambda p=path: call(READ_TOOL, ws, path=p.name, limit=1),  # type: ignore[misc]
            repeat,
        )
        peak = peak_bytes(lambda p=path: call(READ_TOOL, ws, path=p.name, limit=1))  # type: ignore[misc]
        row = (
            f"read limit=1, {size} MB",
            f"{tool * 1000:8.1f} ms vs wc-like {base * 1000:7.1f} ms ({tool / base:4.2f}x); "
            f"peak {peak / MB:5.2f} MB",
        )
        if size <= 100:
            old = timed(lambda p=path: old_read(p), 3)  # type: ignore[misc]
            old_peak = peak_bytes(lambda p=path: old_read(p))  # type: ignore[misc]
            row = (row[0], row[1] + f"; before: {old * 1000:.1f} ms, peak {old_peak / MB:.0f} MB")
        rows.append(row)
        path.unlink()
    return rows


async def bare_bash() -> None:
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", "true", stdout=asyncio.subprocess.DEVNULL, start_new_session=True
    )
    await proc.wait()


def bench_bash(ws: Path) -> list[tuple[str, str]]:
    def through_tool() -> None:
        call(BASH_TOOL, ws, command="true")

    def direct() -> None:
        asyncio.run(bare_bash())

    for _ in range(3):
        through_tool()
        direct()
    base, tool = paired(direct, through_tool, 40)
    cpu_base, cpu_tool = per_call_cpu(direct, 40), per_call_cpu(through_tool, 40)
    return [
        (
            "bash `true`, wall",
            f"{tool * 1000:8.1f} ms vs bare asyncio bash {base * 1000:6.1f} ms: "
            f"+{(tool - base) * 1000:.1f} ms",
        ),
        (
            "bash `true`, CPU",
            f"{cpu_tool * 1000:8.1f} ms vs bare asyncio bash {cpu_base * 1000:6.1f} ms: "
            f"+{(cpu_tool - cpu_base) * 1000:.1f} ms ({cpu_tool / cpu_base:.1f}x)",
        ),
    ]


def cpu_seconds() -> float:
    """CPU time of this process, its reaped children, and the search workers alive
    now (from /proc, in clock ticks): what a call costs whatever the machine's load."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = time.process_time() + children.ru_utime + children.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for pid in WORKERS.idle_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def per_call_cpu(function: Callable[[], object], repeat: int) -> float:
    start = cpu_seconds()
    for _ in range(repeat):
        function()
    return (cpu_seconds() - start) / repeat


def bench_grep(ws: Path) -> list[tuple[str, str]]:
    """`grep` through the tool, on one event loop, against the same search in process;
    and with a fresh worker for every call (what every call cost before workers were
    kept: `WORKERS.close()` before each call). Wall time (median, paired) and CPU time
    (all processes, mean)."""
    rows = []
    loop = asyncio.new_event_loop()
    try:
        for files in (10, 100, 1000):
            tree = ws / f"tree{files}"
            for n in range(files):
                directory = tree / f"d{n % 10}"
                directory.mkdir(parents=True, exist_ok=True)
                (directory / f"f{n}.py").write_text("def f():\n    return 1\n" * 100)
            request = {
                "pattern": "return 2", "ignore_case": False, "glob": None, "root": str(ws),
                "base": str(tree), "limit": 100, "max_line": 300, "max_file": 10 * MB,
            }  # fmt: skip
            context = ToolContext(workspace=ws, timeout=600)
            arguments = {"pattern": "return 2", "path": tree.name}

            def kept(a: dict[str, Any] = arguments, c: ToolContext = context) -> None:
                loop.run_until_complete(GREP_TOOL.execute(a, c))

            def fresh() -> None:
                WORKERS.close()
                kept()

            def alone(r: dict[str, Any] = request) -> None:
                grep_in_process(r)

            kept()  # start the worker kept between calls
            repeat = 30 if files < 1000 else 15
            base, tool = paired(alone, kept, repeat)
            base_f, cold = paired(alone, fresh, max(repeat // 2, 8))
            cpu_base, cpu_kept = per_call_cpu(alone, repeat), per_call_cpu(kept, repeat)
            cpu_fresh = per_call_cpu(fresh, max(repeat // 2, 8))
            rows.append(
                (
                    f"grep, {files} files, wall",
                    f"{tool * 1000:7.2f} ms vs in-process {base * 1000:7.2f} ms: "
                    f"+{(tool - base) * 1000:.2f} ms ({tool / base:.1f}x); a fresh worker per "
                    f"call: {cold * 1000:.1f} ms (+{(cold - base_f) * 1000:.1f} ms, "
                    f"{cold / base_f:.1f}x)",
                )
            )
            rows.append(
                (
                    f"grep, {files} files, CPU",
                    f"{cpu_kept * 1000:7.2f} ms vs in-process {cpu_base * 1000:7.2f} ms: "
                    f"+{(cpu_kept - cpu_base) * 1000:.2f} ms ({cpu_kept / cpu_base:.1f}x); a "
                    f"fresh worker per call: {cpu_fresh * 1000:.1f} ms "
                    f"(+{(cpu_fresh - cpu_base) * 1000:.1f} ms, {cpu_fresh / cpu_base:.1f}x)",
                )
            )
    finally:
        WORKERS.close()
        loop.close()
    return rows


def old_occurrences(text: str, needle: str) -> list[int]:
    """How `edit` counted matches before: every overlapping start."""
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(index)
        index = text.find(needle, index + 1)
    return starts


def bench_edit(ws: Path) -> list[tuple[str, str]]:
    rows = []
    for chars in (10_000, 100_000, 1_000_000):
        text = "a" * (2 * chars)
        (ws / "rep.txt").write_text(text)
        needle = "a" * chars
        base = timed(lambda t=text, n=needle: t.count(n), 5)  # type: ignore[misc]
        tool = timed(
            lambda n=needle: call(EDIT_TOOL, ws, path="rep.txt", old_text=n, new_text="b"),  # type: ignore[misc]
            5,
        )
        figures = f"{tool * 1000:8.1f} ms (str.count alone: {base * 1000:.2f} ms)"
        if chars <= 100_000:
            before = timed(lambda t=text, n=needle: old_occurrences(t, n), 1)  # type: ignore[misc]
            figures += f"; before: {before * 1000:.0f} ms"
        rows.append((f"edit, {chars:,}-char repetitive old_text", figures))
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as directory:
        ws = Path(directory)
        sections: list[tuple[str, Callable[[], list[tuple[str, str]]]]] = [
            (
                "read streams (11.7)",
                lambda: bench_read(ws, [10, 100] if quick else [10, 100, 1000]),
            ),
            ("bash under a supervisor (11.11)", lambda: bench_bash(ws)),
            ("grep in a worker process kept between calls (11.13, 21)", lambda: bench_grep(ws)),
            ("edit with a repetitive old_text (11.10)", lambda: bench_edit(ws)),
        ]
        only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
        for title, run in sections:
            if only and not title.startswith(only):
                continue
            report(title, run())


if __name__ == "__main__":
    main()
