"""`assemble sessions to-test`: converting a long session, and what a replay costs.

Targets (issue 25): converting a 5,000-entry session in under 1 s (against reading
the same file with `json.loads` per line, the floor of reading it at all); replaying
a converted session at most 1.5x a plain scripted run of the same turns (the same
script file, as an eval task without `replay` and `start`), at 10, 100 and 1,000
turns, growing linearly. Both runs are whole eval task runs (`run_task`); the figure
compared is the run itself (`timings["run"]`: the agent's turns and tools), and the
whole task (workspace, build, run, checks) is shown too. Run:
`python bench/bench_session_tests.py`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import median_seconds

from assembler.agent.build import build_agent
from assembler.agent.team import load_team
from assembler.agent.trusting import decide_trust
from assembler.eval.evaluation import check_code
from assembler.eval.execute import run_task
from assembler.eval.load import load_eval
from assembler.eval.plan import Selection, plan_runs
from assembler.eval.records import RunRecord
from assembler.regress.convert import ConvertOptions, convert
from assembler.testing import ScriptedModel, text, tool_call

MANIFEST = """\
version: 1
name: bench
identity: You read files when asked.
context: {purpose: benchmark}
model: scripted:unused.yaml
workspace: ../ws
tools:
  sets:
    - builtin: coding
      allow: [read]
limits: {max_turns: 10000}
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def project(root: Path) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "ws").mkdir()
    for index in range(10):
        (root / "ws" / f"file{index}.txt").write_text(f"line of file {index}\n" * 20)
    (root / "agents" / "bench.yaml").write_text(MANIFEST)
    (root / "agents" / "unused.yaml").write_text("- text: unused\n")
    (root / ".gitignore").write_text(".sessions/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bench")
    return root


def record(root: Path, turns: int) -> Path:
    steps = [tool_call("read", path=f"file{i % 10}.txt") for i in range(turns - 1)]
    model = ScriptedModel([*steps, text("Read them all.")])
    agent = build_agent(
        root / "agents" / "bench.yaml",
        provider=model,
        session_dir=root / ".sessions",
        trust=True,
    )

    async def go() -> None:
        async with agent:
            await agent.prompt("Read the files one by one.")

    asyncio.run(go())
    assert agent.session is not None
    return agent.session.path


def plain_eval(root: Path, converted: Path, turns: int) -> Path:
    """The converted task's script as a plain scripted eval task: no replay, no start."""
    (script,) = (converted.parent / f"{converted.stem.removesuffix('.eval')}.replay").glob(
        "*.script.yaml"
    )
    path = root / "evals" / f"plain{turns}.eval.yaml"
    path.write_text(
        "version: 1\nagent: ../agents/bench.yaml\nworkspace: ../ws\ntasks:\n"
        f"  - id: plain\n    prompt: Read the files one by one.\n"
        f"    model: scripted:{script.relative_to(path.parent).as_posix()}\n"
    )
    return path


def task_run(eval_file: Path) -> Callable[[], RunRecord]:
    report = load_eval(eval_file)
    assert report.spec is not None and report.manifest is not None
    manifest = report.manifest
    (request,) = plan_runs(report.spec, Selection(), eval_file.parent / ".eval-sessions")
    team = load_team(manifest)
    trust = decide_trust(team, True, extra=check_code(report.spec, [request], manifest))

    def run() -> RunRecord:
        record_ = asyncio.run(run_task(request, manifest=manifest, team=team, trust=trust))
        assert record_.status == "passed", record_.first_failure()
        return record_

    return run


def cpu_seconds(function: Callable[[], None], repeat: int = 5) -> float:
    """Median CPU time of this process (the git it starts not included): on a machine
    shared with other jobs, closer to what the work costs than the wall clock."""
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        function()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def converting() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = project(Path(scratch) / "p")
        print("converting a session: size, json.loads floor, convert (in memory), + write")
        for turns in (250, 2500):
            session = record(root, turns)
            entries = sum(1 for _ in session.open("rb"))
            out = root / "evals" / f"c{turns}.eval.yaml"

            def floor(session: Path = session) -> None:
                with session.open("rb") as handle:
                    for line in handle:
                        json.loads(line)

            def ours(session: Path = session, out: Path = out) -> None:
                convert(session, ConvertOptions(out=out))

            def written(session: Path = session, out: Path = out) -> None:
                convert(session, ConvertOptions(out=out)).write(force=True)

            base = median_seconds(floor, repeat=5, warmup=1)
            ours_s = median_seconds(ours, repeat=5, warmup=1)
            write_s = median_seconds(written, repeat=5, warmup=1)
            cpu = cpu_seconds(written)
            print(
                f"  {entries:>6} entries: floor {base * 1000:7.1f} ms, convert "
                f"{ours_s * 1000:7.1f} ms ({ours_s / base:4.1f}x), with writing "
                f"{write_s * 1000:7.1f} ms (CPU time {cpu * 1000:7.1f} ms)"
            )


def replaying(sizes: tuple[int, ...] = (10, 100, 1000)) -> None:
    print("replaying against a plain scripted run of the same turns (run / whole task)")
    with tempfile.TemporaryDirectory() as scratch:
        root = project(Path(scratch) / "p")
        for turns in sizes:
            session = record(root, turns)
            converted = root / "evals" / f"r{turns}.eval.yaml"
            convert(session, ConvertOptions(out=converted)).write()
            replay, plain = task_run(converted), task_run(plain_eval(root, converted, turns))
            repeat = 7 if turns < 1000 else 3
            samples: dict[str, list[tuple[float, float]]] = {"plain": [], "replay": []}
            replay(), plain()  # warm
            for _ in range(repeat):  # interleaved, so load affects both alike
                for name, run in (("plain", plain), ("replay", replay)):
                    start = time.perf_counter()
                    done = run()
                    samples[name].append((done.timings["run"], time.perf_counter() - start))
            plain_run = statistics.median(s[0] for s in samples["plain"])
            replay_run = statistics.median(s[0] for s in samples["replay"])
            plain_all = statistics.median(s[1] for s in samples["plain"])
            replay_all = statistics.median(s[1] for s in samples["replay"])
            print(
                f"  {turns:>5} turns: plain {plain_run * 1000:8.1f} ms, replay "
                f"{replay_run * 1000:8.1f} ms ({replay_run / plain_run:4.2f}x; "
                f"{replay_run / turns * 1e6:6.0f} µs/turn) | whole task plain "
                f"{plain_all * 1000:8.1f} ms, replay {replay_all * 1000:8.1f} ms "
                f"({replay_all / plain_all:4.2f}x)"
            )


if __name__ == "__main__":
    converting()
    replaying()
