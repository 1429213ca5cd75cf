"""A read-only open of a memory store that has no index of its own (a fresh clone).

    python bench/bench_memory_clone.py [--sizes 1000,10000,100000] [--runs 3]

The index is not committed, so a clone has only the record files, and a read-only
open (`render --dry-run`, `memory list`) may not write one into the store (issue 21).
Each figure is the CPU time (user + sys) of a fresh process, imports excluded, on a
store of synthetic records (`bench_memory.Corpus`), with warm file caches:

- open only: `MemoryStore.open(read_only=True)` and nothing asked (`render --dry-run`
  without `--input`);
- open + first `keyword` selection as `memory list` opens (`keep_index`): the first
  time (the index is built in the user's cache) and the next time (the kept index
  reused);
- the same as a dry run opens (no `keep_index`: it writes nothing anywhere), once the
  index is kept (read as it is);
- baseline, same run: the same open + selection with no kept index, built in memory:
  what every such open did before, and what a dry run still does until something
  kept an index.
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

    path, question, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    ask, keep = mode != "open", mode == "keep"
    policy = MemoryPolicy(store=path, strategy="keyword", max_records=5, max_chars=4000)
    start = time.process_time()
    store = MemoryStore.open(path, policy, read_only=True, keep_index=keep)
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
    samples: dict[str, list[float]] = {
        "open": [],
        "first": [],
        "again": [],
        "dry": [],
        "memory": [],
    }
    for run in range(runs):
        cache = root / f"cache-{size}-{run}"  # empty: the first keeping open builds the index
        question = corpus.question()
        samples["memory"].append(child_ms(store, question, "dry", cache))
        samples["open"].append(child_ms(store, question, "open", cache))
        samples["first"].append(child_ms(store, question, "keep", cache))
        samples["again"].append(child_ms(store, corpus.question(), "keep", cache))
        samples["dry"].append(child_ms(store, corpus.question(), "dry", cache))
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
                    f"({r['open'] / base:.4f}x) | keeping: first {r['first']:8.0f} ms "
                    f"({r['first'] / base:.2f}x), next {r['again']:6.0f} ms "
                    f"({r['again'] / base:.3f}x) | dry run, index kept {r['dry']:6.0f} ms "
                    f"({r['dry'] / base:.3f}x)",
                )
            )
            print(rows[-1][1], flush=True)
    report(f"read-only open of a store without its index (median CPU of {args.runs})", rows)


if __name__ == "__main__":
    main()
