"""`assemble eval` tasks per second against the tree before the long-lived process
supervisor (issue 21): the whole command, in processes of its own, each tree in turn.

Before `d86472d` every `bash` call (and every `command` check) started a Python
supervisor process of its own; since then one supervisor per process hands commands
to command supervisors it forked ahead. The tasks are `bench_eval.py`'s: a scripted
model makes one `bash` call (`echo hello`) and answers; two checks (`command: test -d
src`, `tool_called: bash`); a workspace of 20 small files. Each command runs `assemble
eval FILE --trust --out NEW` with the package imported from the tree measured
(`_timing.tree_command`), alternating trees round by round; the figure is the median
of the rounds' tasks per second (wall time, whole process: start-up included), and
the median CPU time per task (user + sys of the command and every process it waited
for).

Run: `python bench/bench_eval_supervisor.py [--before REV] [--tasks 10,100]
[--concurrency 1,4] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _timing import REPO, report, source_tree, tree_command
from bench_eval import project


def one_run(
    tree: Path, cache: Path, eval_file: Path, out: Path, concurrency: int
) -> tuple[float, float]:
    """Wall and CPU seconds of one `assemble eval` (every run must pass)."""
    argv, env = tree_command(tree, cache, "eval", str(eval_file), "--trust", "--out", str(out),
                             "--concurrency", str(concurrency))  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=eval_file.parent, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"eval failed ({tree}): {done.stdout[-800:]}{done.stderr[-800:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="914faa6", help="the tree before the supervisor")
    parser.add_argument("--tasks", default="10,100")
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.tasks.split(",")]
    levels = [int(n) for n in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-eval-sup-") as scratch:
        root = Path(scratch)
        trees = {"now": REPO, f"before ({args.before})": source_tree(args.before, root / "before")}
        files = {}
        for n in sizes:
            (root / f"p{n}").mkdir()
            files[n] = project(root / f"p{n}", n)
        samples: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
        for tree in trees.values():  # warm the bytecode caches
            one_run(tree, root / "pyc", files[sizes[0]], root / "warm.jsonl", levels[-1])
            (root / "warm.jsonl").unlink()
        for n in sizes:
            for level in levels:
                for round_ in range(args.rounds):
                    for name, tree in trees.items():
                        out = root / f"out-{n}-{level}-{round_}-{len(name)}.jsonl"
                        wall, cpu = one_run(tree, root / "pyc", files[n], out, level)
                        samples.setdefault((name, n, level), []).append((wall, cpu))
        rows = []
        for n in sizes:
            for level in levels:
                rates = {}
                for name in trees:
                    values = samples[(name, n, level)]
                    wall = statistics.median(v[0] for v in values)
                    cpu = statistics.median(v[1] for v in values)
                    rates[name] = n / wall
                    rows.append(
                        (
                            f"{n} tasks, concurrency {level}, {name}",
                            f"{n / wall:6.1f} tasks/s ({wall:6.2f} s), CPU {cpu / n * 1000:6.1f} ms/task",
                        )
                    )
                now, before = rates.values()
                rows.append(
                    (f"{n} tasks, concurrency {level}, now / before", f"{now / before:6.2f}x")
                )
        report(f"assemble eval, whole command, median of {args.rounds} rounds", rows)


if __name__ == "__main__":
    main()
