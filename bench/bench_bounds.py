"""What the bounds of issue 20 (items 17, 21, 22) cost, at growing sizes.

- An evaluation's `answer_matches` runs in a worker process stopped at `check_timeout`;
  baseline: `re.search` in the evaluation's own process, as before (unbounded).
- A passthrough glob now looks at each matching variable's value; baseline: the same
  environment with the names checked only (the value check switched off).
- A session listing reads each file in bounded batches of lines; baseline: reading the
  whole file and splitting it once, as before (unbounded memory).

Run: `python bench/bench_bounds.py`.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
from pathlib import Path

from _timing import median_seconds, report
from bench_session_list import write_session

from assembler.eval.checks import run_checks
from assembler.eval.spec import Check
from assembler.sessions import catalog
from assembler.sessions.file_reads import bounded_lines, open_regular
from assembler.sessions.store import SessionStore
from assembler.tools import environment


def answer_matches(sizes: tuple[int, ...] = (10, 100, 1000, 10000)) -> None:
    rows = []
    check = Check.from_dict({"answer_matches": r"total: (\d+) items"})

    def process_start() -> None:
        async def start() -> None:
            proc = await asyncio.create_subprocess_exec(sys.executable, "-I", "-S", "-c", "pass")
            await proc.wait()

        asyncio.run(start())

    floor = median_seconds(process_start, repeat=15, warmup=2)
    for kb in sizes:
        answer = ("words and more words " * (kb * 1024 // 21)) + "total: 42 items"

        def inline(answer: str = answer) -> None:
            assert re.search(check.argument, answer) is not None

        def ours(answer: str = answer) -> None:
            [result] = asyncio.run(
                run_checks(
                    [check],
                    workspace=Path("."),
                    answer=answer,
                    calls=[],
                    before={},
                    check_timeout=60,
                )
            )
            assert result.passed

        base = median_seconds(inline, repeat=15, warmup=2)
        mine = median_seconds(ours, repeat=15, warmup=2)
        rows.append(
            (
                f"{kb:>6} KB answer",
                f"re.search in process {base * 1e3:8.2f} ms; in the worker {mine * 1e3:7.1f} ms "
                f"(+{(mine - base) * 1e3:.1f} ms; {mine / floor:.1f}x a bare `python -I -S` "
                f"start, {floor * 1e3:.1f} ms)",
            )
        )
    report("answer_matches: one check, in the worker vs re.search in process", rows)


def passthrough(counts: tuple[int, ...] = (10, 100, 1000)) -> None:
    rows = []
    for count in counts:
        parent = {"PATH": "/usr/bin:/bin", "HOME": "/home/u"}
        for index in range(count):
            parent[f"APP_SETTING_{index}"] = f"https://cdn.example.com/assets/{index}?v=3"

        def names_only(parent: dict[str, str] = parent) -> None:
            original = environment.carries_credentials
            environment.carries_credentials = lambda value: False  # type: ignore[assignment]
            try:
                environment.tool_environment(parent, passthrough=["APP_*"])
            finally:
                environment.carries_credentials = original  # type: ignore[assignment]

        def ours(parent: dict[str, str] = parent) -> None:
            environment.tool_environment(parent, passthrough=["APP_*"])

        base = median_seconds(names_only, repeat=50)
        mine = median_seconds(ours, repeat=50)
        rows.append(
            (
                f"{count:>5} variables matching `APP_*`",
                f"names only {base * 1e6:8.1f} µs; with values {mine * 1e6:8.1f} µs "
                f"({mine / base:.2f}x; {(mine - base) / count * 1e6:.2f} µs per variable)",
            )
        )
    report("tool_environment: a glob over N variables, values checked vs names only", rows)


def listing(counts: tuple[int, ...] = (10, 100, 1000), entries: int = 99) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for count in counts:
            store = SessionStore(Path(scratch) / str(count))
            for _ in range(count):
                write_session(store, entries)
            infos = store.list()

            def whole(infos: list = infos) -> None:  # type: ignore[type-arg]
                for info in infos:
                    lines = [line for line in info.path.read_bytes().split(b"\n") if line]
                    assert lines

            def batches(infos: list = infos) -> None:  # type: ignore[type-arg]
                for info in infos:
                    fd, _ = open_regular(info.path)
                    try:
                        lines = [line for b in bounded_lines(fd, 32 << 20) for line in b if line]
                    finally:
                        os.close(fd)
                    assert lines

            def summaries(infos: list = infos) -> None:  # type: ignore[type-arg]
                for info in infos:
                    catalog.summarise(info)

            repeat = 5 if count >= 1000 else 15
            base = median_seconds(whole, repeat=repeat, warmup=1)
            read = median_seconds(batches, repeat=repeat, warmup=1)
            mine = median_seconds(summaries, repeat=repeat, warmup=1)
            rows.append(
                (
                    f"{count:>5} sessions of {entries} entries",
                    f"read whole + split {base * 1e3:7.1f} ms; bounded batches {read * 1e3:7.1f} ms "
                    f"({read / base:.2f}x); full summaries {mine * 1e3:7.1f} ms "
                    f"({mine / count * 1e6:.0f} µs/session)",
                )
            )
    report("session files: bounded line batches vs one read and split", rows)


if __name__ == "__main__":
    answer_matches()
    passthrough()
    listing()
