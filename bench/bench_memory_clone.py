"""A read-only open of a memory store that has no index of its own (a fresh clone).

    python bench/bench_memory_clone.py [--sizes 1000,10000,100000] [--runs 3]

The index is not committed, so a clone has only the record files, and a read-only
open (`render --dry-run`, `memory list`) may not write one into the store (issue 21).
Each figure is the CPU time (user + sys) of a fresh process, imports excluded, on a
store of synthetic records (`bench_memory.Corpus`), with warm file caches:

- open only: `MemoryStore.open(read_only=True)` and nothing asked (`render --dry-run`
  without `--input`);
- open + first `keyword` selection, the first time (the index is built in the user's
  cache) and the next time (the kept index is reused);
- baseline, same run: the same open + selection with the index built in memory, what
  every such open did before, and still does when no cache directory can be written
  (`ASSEMBLER_CACHE_DIR` pointing at a file).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _timing import report
from bench_memory import Corpus

from assembler.memory.records import to_markdown

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from assembler.manifest.model import MemoryPolicy
    from assembler.memory import MemorySession, MemoryStore

    path, question, ask = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "select"
    policy = MemoryPolicy(store=path, strategy="keyword", max_records=5, max_chars=4000)
    start = time.process_time()
    store = MemoryStore.open(path, policy, read_only=True)
    if ask:
        assert asyncio.run(MemorySession(store, policy).select(question)), "nothing selected"
    print((time.process_time() - start) * 1000)
    """
)


def child_ms(store: Path, question: str, ask: str, cache: Path) -> float:
    env = {**os.environ, "ASSEMBLER_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(store), question, ask],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"child failed: {done.stderr[-2000:]}")
    return float(done.stdout.strip())


def measure(size: int, runs: int, root: Path) -> dict[str, float]:
    corpus = Corpus(7)
    store = root / f"clone-{size}"
    store.mkdir()
    for i in range(size):
        record = corpus.record(i)
        (store / f"{record.name}.md").write_text(to_markdown(record), encoding="utf-8")
    unusable = root / "not-a-directory"
    unusable.touch()
    samples: dict[str, list[float]] = {"open": [], "first": [], "again": [], "memory": []}
    for run in range(runs):
        cache = root / f"cache-{size}-{run}"  # empty: the first open builds the kept index
        question = corpus.question()
        samples["memory"].append(child_ms(store, question, "select", unusable))
        samples["open"].append(child_ms(store, question, "open", cache))
        samples["first"].append(child_ms(store, question, "select", cache))
        samples["again"].append(child_ms(store, corpus.question(), "select", cache))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-clone-") as scratch:
        for size in sizes:
            r = measure(size, args.runs, Path(scratch))
            base = r["memory"]
            rows.append(
                (
                    f"{size:,} records",
                    f"baseline (indexed in memory) {base:8.0f} ms | open only {r['open']:6.1f} ms "
                    f"({r['open'] / base:.4f}x) | first selection, kept index built "
                    f"{r['first']:8.0f} ms ({r['first'] / base:.2f}x) | next time "
                    f"{r['again']:6.0f} ms ({r['again'] / base:.3f}x)",
                )
            )
            print(rows[-1][1], flush=True)
    report(f"read-only open of a store without its index (median CPU of {args.runs})", rows)


if __name__ == "__main__":
    main()
