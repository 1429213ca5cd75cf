"""Benchmark: the memory store at 1,000, 10,000 and 100,000 records (issue 12, "Scale").

    python bench/bench_memory.py [--sizes 1000,10000,100000] [--adds 30] [--turns 20]
                                 [--processes 5]

For each size, a store of synthetic records (words drawn from a Zipf-like vocabulary, so
common words have long posting lists, as in real text) is written straight to disk,
then its index is built by opening it. With warm file caches, it measures:

- add: `MemoryStore.add` of one new record in a store of that size, median of `--adds`.
  Baseline: the crash-safe write of the same record file alone (temp file, fsync,
  rename, fsync of the directory), the floor of any add that keeps the files as truth.
- first selection in a new process: `MemoryStore.open` plus the first `keyword`
  selection, timed inside a fresh interpreter (imports excluded), median over
  `--processes` processes with different questions; writable (`assemble run`) and
  read-only (`render --dry-run`). Baseline, in the same kind of fresh process:
  `json.loads` of an index of the previous layout (`index.json`: one row per record
  with its term counts), which is what the previous store paid before it could even
  start building its keyword index.
- the same, right after a record file was added by hand (the directory changed, so
  the open scans every file's stamp): the cost of repairing the index.
- warm selection: `MemorySession.select` after the first turn, median over `--turns`
  questions. Baseline: a linear BM25 scan over per-record term dicts already in memory
  (no index), computing the same scores; the two rankings are compared.

Targets (issue 12): an add costs about the same at 1,000 and 100,000 records; the first
selection in a new process stays under 300 ms at 100,000.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from assembler.files import atomic_write
from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemorySession, MemoryStore, Selector, make_record, tokenize
from assembler.memory.keyword import K1, B, record_terms
from assembler.memory.records import MemoryRecord, to_markdown

FIRST_SELECTION_TARGET_MS = 300.0
FILLERS = ["how", "do", "i", "the", "what", "about", "with", "please"]

FIRST_SELECTION = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from assembler.manifest.model import MemoryPolicy
    from assembler.memory import MemorySession, MemoryStore

    path, question, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    policy = MemoryPolicy(store=path, strategy="keyword", max_records=5, max_chars=4000)
    start = time.perf_counter()
    store = MemoryStore.open(path, policy, read_only=mode == "ro")
    chosen = asyncio.run(MemorySession(store, policy).select(question))
    elapsed = time.perf_counter() - start
    assert chosen, "nothing selected"
    print(elapsed * 1000)
    """
)
LOAD_LEGACY_INDEX = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    with open(sys.argv[1], "rb") as handle:
        json.loads(handle.read())
    print((time.perf_counter() - start) * 1000)
    """
)


class Corpus:
    """Synthetic records and questions from one seeded vocabulary."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        letters = "abcdefghijklmnopqrstuvwxyz"
        words: set[str] = set()
        while len(words) < 5000:
            words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
        self.words = sorted(words)
        self.cumulative = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(words))))
        self.rng = rng

    def sample(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=k)

    def record(self, number: int, prefix: str = "") -> MemoryRecord:
        types = ("user", "feedback", "project", "reference")
        return make_record(
            f"{prefix}{'-'.join(self.sample(2))}-{number}",
            " ".join(self.sample(self.rng.randint(5, 10))),
            types[number % 4],
            " ".join(self.sample(self.rng.randint(40, 120))),
        )

    def question(self) -> str:
        return " ".join(self.sample(self.rng.randint(3, 8)) + self.rng.sample(FILLERS, 3))


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples)


def timed_ms(function: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000


def child_ms(script: str, *args: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"child failed: {done.stderr[-2000:]}")
    return float(done.stdout.strip())


class LinearScan:
    """The baseline: BM25 by visiting every record's term dict on every question."""

    def __init__(self, records: list[MemoryRecord]) -> None:
        self.docs = {r.name: record_terms(r.name, r.description, r.body) for r in records}
        self.lengths = {name: sum(terms.values()) for name, terms in self.docs.items()}
        self.average = sum(self.lengths.values()) / len(self.docs)

    def rank(self, question: str) -> list[str]:
        terms = sorted(set(tokenize(question)))
        total = len(self.docs)
        frequency = {t: sum(1 for d in self.docs.values() if t in d) for t in terms}
        scores: dict[str, float] = {}
        for name, doc in self.docs.items():
            norm = K1 * (1 - B + B * self.lengths[name] / self.average)
            score = 0.0
            for term in terms:
                count = doc.get(term)
                if count:
                    idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                    score += idf * (K1 + 1) * count / (count + norm)
            if score:
                scores[name] = score
        return [name for name, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def write_legacy_index(path: Path, records: list[MemoryRecord], store: Path) -> None:
    """An index of the previous layout for the same records: the baseline's input."""
    rows = []
    for record in records:
        info = os.stat(store / f"{record.name}.md")
        terms = record_terms(record.name, record.description, record.body)
        encoded = " ".join(f"{term}:{count}" for term, count in terms.items())
        rows.append(
            json.dumps(
                [
                    record.name,
                    record.description,
                    record.type,
                    len(record.body),
                    info.st_ino,
                    info.st_mtime_ns,
                    info.st_size,
                    encoded,
                ]
            )
        )
    text = (
        '{"format": "assembler-memory-index", "version": 1,\n"records": [\n'
        + ",\n".join(rows)
        + '\n],\n"invalid": []}\n'
    )
    path.write_text(text, encoding="utf-8")


def measure(size: int, args: argparse.Namespace, root: Path) -> dict[str, float]:
    corpus = Corpus(args.seed)
    path = root / f"memory-{size}"
    path.mkdir()
    records = [corpus.record(i) for i in range(size)]
    start = time.perf_counter()
    for record in records:
        (path / f"{record.name}.md").write_text(to_markdown(record), encoding="utf-8")
    files_s = time.perf_counter() - start
    policy = MemoryPolicy(store=path, strategy="keyword", max_records=5, max_chars=4000)
    build_ms = timed_ms(lambda: MemoryStore.open(path, policy).close())
    legacy = root / f"legacy-{size}.json"
    write_legacy_index(legacy, records, path)
    index_mb = sum(p.stat().st_size for p in (path / ".index").iterdir()) / 1e6
    print(
        f"\n{size:,} records: files written in {files_s:.1f} s; index built from them in "
        f"{build_ms / 1000:.1f} s ({index_mb:.0f} MB; legacy index.json "
        f"{legacy.stat().st_size / 1e6:.0f} MB)",
        flush=True,
    )

    # First selection in a new process, and its baseline, interleaved.
    questions = [corpus.question() for _ in range(args.processes)]
    child_ms(FIRST_SELECTION, str(path), questions[0], "rw")  # warm the page cache
    first_rw, first_ro, legacy_ms = [], [], []
    for question in questions:
        first_rw.append(child_ms(FIRST_SELECTION, str(path), question, "rw"))
        first_ro.append(child_ms(FIRST_SELECTION, str(path), question, "ro"))
        legacy_ms.append(child_ms(LOAD_LEGACY_INDEX, str(legacy)))
    # After a change by hand: the directory differs, so the open scans every file.
    by_hand = corpus.record(size, prefix="hand-")
    (path / f"{by_hand.name}.md").write_text(to_markdown(by_hand), encoding="utf-8")
    scan_ms = child_ms(FIRST_SELECTION, str(path), questions[0], "rw")

    # Adds, and their baseline.
    store = MemoryStore.open(path, policy)
    scratch = root / f"scratch-{size}"
    scratch.mkdir()
    adds, floor = [], []
    for i in range(args.adds):
        record = corpus.record(size + 1 + i, prefix="added-")
        data = to_markdown(record).encode("utf-8")
        floor.append(timed_ms(lambda d=data, n=i: atomic_write(scratch / f"r{n}.md", d)))
        adds.append(timed_ms(lambda r=record: store.add(r)))

    # Warm selection, and its baseline with the rankings compared.
    session = MemorySession(store, policy)
    asyncio.run(session.select("first question " + questions[0]))
    turns = [corpus.question() for _ in range(args.turns)]

    async def run_turns() -> list[float]:
        times = []
        for question in turns:
            gc.collect()
            begin = time.perf_counter()
            await session.select(question)
            times.append((time.perf_counter() - begin) * 1000)
        return times

    warm = asyncio.run(run_turns())
    added = [store.get(name) for name in store.names() if name.startswith("added-")]
    scan = LinearScan([*records, by_hand, *(record for record in added if record is not None)])
    selector = Selector(store, policy)
    scan_times, same = [], 0
    for question in turns:
        begin = time.perf_counter()
        expected = scan.rank(question)
        scan_times.append((time.perf_counter() - begin) * 1000)
        head = [entry.name for entry in itertools.islice(selector.rank(question), 64)]
        same += head == expected[:64]
    store.close()
    return {
        "add": median_ms(adds),
        "add_floor": median_ms(floor),
        "first_rw": median_ms(first_rw),
        "first_ro": median_ms(first_ro),
        "legacy": median_ms(legacy_ms),
        "scan": scan_ms,
        "warm": median_ms(warm),
        "warm_worst": max(warm),
        "linear": median_ms(scan_times),
        "same": same,
        "turns": len(turns),
        "build": build_ms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--adds", type=int, default=30)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]

    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for size in sizes:
            results[size] = measure(size, args, Path(tmp))

    print(
        "\n| records | add (baseline: write the file) | first selection, new process, "
        "writable / read-only (baseline: json.loads of the old index.json) | "
        "after a hand edit (scan) | warm selection (baseline: linear BM25 scan) |"
    )
    print("|---|---|---|---|---|")
    for size, r in results.items():
        print(
            f"| {size:,} | {r['add']:.2f} ms ({r['add_floor']:.2f} ms: "
            f"{r['add'] / r['add_floor']:.2f}x) | {r['first_rw']:.0f} / {r['first_ro']:.0f} ms "
            f"({r['legacy']:.0f} ms: {r['first_rw'] / r['legacy']:.2f}x) | {r['scan']:.0f} ms | "
            f"{r['warm']:.1f} ms, worst {r['warm_worst']:.1f} ({r['linear']:.0f} ms: "
            f"{r['warm'] / r['linear']:.3f}x; same top 64 in {r['same']}/{r['turns']}) |"
        )
    smallest, largest = sizes[0], sizes[-1]
    growth = largest / smallest
    for key, label in (("add", "add"), ("first_rw", "first selection"), ("warm", "warm selection")):
        factor = results[largest][key] / results[smallest][key]
        print(
            f"{label}: {factor:.2f}x from {smallest:,} to {largest:,} records "
            f"({growth:.0f}x the records): {'sub-linear' if factor < growth / 4 else 'linear'}"
        )
    ok = (
        results[largest]["first_rw"] < FIRST_SELECTION_TARGET_MS
        and results[largest]["first_ro"] < FIRST_SELECTION_TARGET_MS
        and all(r["same"] == r["turns"] for r in results.values())
    )
    print("result:", "within targets" if ok else "OUT OF TARGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
