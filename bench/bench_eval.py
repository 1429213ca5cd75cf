"""`assemble eval` throughput and per-task overhead (issue 17).

Tasks: a scripted model that makes one `bash` call (`echo`) and answers; two checks
(a `command` and `tool_called`); a workspace of 20 small files. Measured in one run:

- per-task cost, one task at a time: a bare `build_agent` + `prompt` on the same
  manifest (the baseline: what the agent itself costs) against a whole eval task run
  (copy the workspace, build, run, checks, remove the copy), with its breakdown;
- in-process throughput at 10, 50 and 200 tasks, concurrency 8 (and 1);
- the copy at 10, 100 and 1,000 workspace files (it grows with the workspace);
- 200 tasks on a `LocalCluster` of 1, 2, 4 and 8 worker processes (cluster start-up
  measured apart).

Run: `python bench/bench_eval.py` (about four minutes on 2 cores).
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from _timing import report

from assembler.agent.build import build_agent
from assembler.eval.evaluation import LocalExecutor, drive
from assembler.eval.load import load_eval
from assembler.eval.plan import Selection, plan_runs
from assembler.eval.progress import Progress
from assembler.eval.records import ResultsWriter, read_results
from assembler.eval.spec import RunRequest
from assembler.eval.workspace import copy_workspace
from assembler.manifest.model import Manifest

AGENT = """\
version: 1
name: bench
identity: You run one command and answer.
model: scripted:reply.yaml
workspace: ws
tools: {sets: [coding]}
"""


def script(command: str) -> list[dict[str, object]]:
    return [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "It printed hello.", "usage": {"input_tokens": 900, "output_tokens": 12}},
    ]


def project(root: Path, tasks: int, files: int = 20, command: str = "echo hello") -> Path:
    """An agent, a workspace of `files` files and an eval file of `tasks` tasks whose
    model makes one `bash` call (`command`)."""
    (root / "ws" / "src").mkdir(parents=True)
    for n in range(files):
        (root / "ws" / "src" / f"m{n}.py").write_text(f"VALUE_{n} = {n}\n" * 20)
    (root / "agent.yaml").write_text(AGENT)
    (root / "reply.yaml").write_text(yaml.safe_dump(script(command)))
    checks = [{"command": "test -d src"}, {"tool_called": "bash"}]
    data = {
        "version": 1,
        "agent": "agent.yaml",
        "tasks": [{"id": f"t{n}", "prompt": "Say hello.", "checks": checks} for n in range(tasks)],
    }
    path = root / "bench.eval.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def runs_of(path: Path, out: Path) -> tuple[list[RunRequest], Manifest]:
    report_ = load_eval(path)
    assert report_.spec is not None and report_.manifest is not None
    return plan_runs(report_.spec, Selection(), out / "sessions"), report_.manifest


async def one_bare(manifest: Manifest, sessions: Path) -> float:
    """Seconds for `build_agent` + `prompt` + `aclose`, nothing else."""
    start = time.perf_counter()
    agent = build_agent(manifest, session_dir=sessions, trust=True)
    result = await agent.prompt("Say hello.")
    await agent.aclose()
    assert result.completed
    return time.perf_counter() - start


async def per_task(
    runs: list[RunRequest], manifest: Manifest, sessions: Path
) -> tuple[float, float, dict[str, float]]:
    """Medians of a bare agent run and of a whole eval task run, taken in turns so
    the load of a shared machine falls on both alike; and where a task run's time goes."""
    executor = LocalExecutor(manifest)
    bare, whole, parts = [], [], {}
    for request in runs:
        bare.append(await one_bare(manifest, sessions))
        start = time.perf_counter()
        record = await executor.run(request)
        whole.append(time.perf_counter() - start)
        assert record.status == "passed", record.first_failure()
        for name, value in record.timings.items():
            parts.setdefault(name, []).append(value)
    medians = {k: statistics.median(v) for k, v in parts.items()}
    return statistics.median(bare), statistics.median(whole), medians


async def throughput(runs: list[RunRequest], manifest: Manifest, out: Path, lanes: int) -> float:
    writer = ResultsWriter(out / f"local-{lanes}-{len(runs)}.jsonl")
    start = time.perf_counter()
    await drive(
        runs, LocalExecutor(manifest), concurrency=lanes, writer=writer,
        progress=Progress(io.StringIO(), tty=False),
    )  # fmt: skip
    rate = len(runs) / (time.perf_counter() - start)
    writer.close()
    all_passed(writer.path)
    return rate


async def on_cluster(
    runs: list[RunRequest], manifest: Manifest, out: Path, workers: int, rounds: int = 3
) -> tuple[float, float]:
    """Cluster start-up seconds, and the median rate of `rounds` passes over `runs`."""
    from assembler.eval.cluster import DaskExecutor

    start = time.perf_counter()
    executor = await DaskExecutor.start(f"local:{workers}", manifest, [runs[0].manifest])
    started = time.perf_counter() - start
    rates = []
    try:
        for round_ in range(rounds):
            writer = ResultsWriter(out / f"cluster-{workers}-{round_}.jsonl")
            start = time.perf_counter()
            await drive(
                runs, executor, concurrency=executor.slots, writer=writer,
                progress=Progress(io.StringIO(), tty=False),
            )  # fmt: skip
            rates.append(len(runs) / (time.perf_counter() - start))
            writer.close()
            all_passed(writer.path)
    finally:
        await executor.aclose()
    return started, statistics.median(rates)


def all_passed(results: Path) -> None:
    """A rate over runs that failed would measure nothing."""
    records = read_results(results).records.values()
    failing = [r.first_failure() for r in records if r.status != "passed"]
    assert not failing, failing[:3]


def manifest_of(runs: list[RunRequest]) -> Manifest:
    from assembler.validation.load import load_manifest

    return load_manifest(runs[0].manifest)


def copy_cost(root: Path, files: int) -> float:
    source = root / f"copy-{files}"
    for n in range(files):
        folder = source / f"d{n % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text("x" * 400)
    samples = []
    for _ in range(20):
        scratch = Path(tempfile.mkdtemp(dir=root))
        start = time.perf_counter()
        copy_workspace(source, scratch)
        shutil.rmtree(scratch)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def main() -> None:
    os.environ.setdefault("ASSEMBLER_DATA_DIR", tempfile.mkdtemp(prefix="bench-eval-data-"))
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as temporary:
        root = Path(temporary)
        path = project(root / "p", 200)
        runs, manifest = runs_of(path, root)

        base, whole, parts = await per_task(runs[:60], manifest, root / "bare")
        breakdown = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in parts.items())
        rows = [
            ("bare build_agent + prompt (baseline)", f"{base * 1000:.1f} ms"),
            ("one eval task run, alone", f"{whole * 1000:.1f} ms ({whole / base:.2f}x)"),
            ("  added per task", f"{(whole - base) * 1000:.1f} ms"),
            ("  where it goes (medians)", breakdown),
        ]
        for files in (10, 100, 1000):
            rows.append(
                (f"copy + remove, {files:,} files", f"{copy_cost(root, files) * 1000:.1f} ms")
            )
        report("per task, one at a time", rows)

        waiting, _ = runs_of(project(root / "w", 40, command="sleep 0.2"), root / "w")
        rates: dict[str, list[float]] = {}
        for _ in range(3):  # rounds, each configuration once per round
            for count in (10, 50, 200):
                for lanes in (1, 8):
                    rate = await throughput(runs[:count], manifest, root, lanes)
                    rates.setdefault(f"{count} tasks, concurrency {lanes}", []).append(rate)
            for lanes in (1, 8):
                rate = await throughput(waiting, manifest_of(waiting), root, lanes)
                rates.setdefault(f"40 tasks waiting 0.2 s, concurrency {lanes}", []).append(rate)
        rows = []
        for name, values in rates.items():
            rate = statistics.median(values)
            rows.append((name, f"{rate:.1f} tasks/s ({1000 / rate:.1f} ms per task)"))
        report("in process (one event loop), median of 3 rounds", rows)

        rows = []
        for workers in (1, 2, 4, 8):
            started, rate = await on_cluster(runs, manifest, root, workers)
            rows.append(
                (
                    f"LocalCluster, {workers} worker(s)",
                    f"{rate:.1f} tasks/s (start-up {started:.1f} s)",
                )
            )
        report("200 tasks on Dask worker processes (1 thread each), median of 3 passes", rows)


if __name__ == "__main__":
    asyncio.run(main())
