"""Small timing helpers shared by the benchmarks (medians, not means: one slow run on
a busy machine should not move the figure)."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def median_seconds(function: Callable[[], object], *, repeat: int = 200, warmup: int = 5) -> float:
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def process_medians(
    commands: dict[str, Sequence[str]], *, runs: int = 15, cwd: Path = REPO
) -> dict[str, float]:
    """Median wall time of each command, run interleaved so load affects all alike."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(2):  # warm the OS caches
        for command in commands.values():
            subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            done = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
            samples[name].append(time.perf_counter() - start)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name} failed: {done.stderr.decode()[-500:]}")
    return {name: statistics.median(values) for name, values in samples.items()}


def warm_bytecode_env(cache: Path) -> dict[str, str]:
    """The environment of an installed package: bytecode compiled once (into `cache`,
    so the checkout stays clean) and reused, whatever PYTHONDONTWRITEBYTECODE says."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def process_cpu(
    commands: Mapping[str, Sequence[str]],
    *,
    runs: int = 15,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
    envs: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, float]:
    """Median CPU time (user + sys, from `getrusage(RUSAGE_CHILDREN)`) of each command,
    run interleaved; CPU time, unlike wall time, hardly moves with the machine's load.
    `envs` gives some commands an environment of their own (a tree `--before`)."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    chosen = {name: (envs or {}).get(name, env) for name in commands}
    for _ in range(2):  # warm the OS caches and the bytecode cache
        for name, command in commands.items():
            subprocess.run(command, cwd=cwd, env=chosen[name], capture_output=True, check=False)
    for _ in range(runs):
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(
                command, cwd=cwd, env=chosen[name], capture_output=True, check=False
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr.decode()[-500:]}")
            samples[name].append(
                after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            )
    return {name: statistics.median(values) for name, values in samples.items()}


def source_tree(revision: str, into: Path) -> Path:
    """The package as it was at `revision` (`git archive`), to run beside this one."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", revision, "assembler"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def tree_command(tree: Path, cache: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """`python -m assembler args` importing the package from `tree`: without `site`
    (whose editable-install finder would import this checkout) and without the
    current directory on the path (`-P`: it may be this checkout), the installed
    packages on `PYTHONPATH` after the tree, bytecode cached in `cache`. The same for
    any tree, so two trees compare."""
    import sysconfig

    env = warm_bytecode_env(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), sysconfig.get_paths()["purelib"]])
    return [sys.executable, "-S", "-P", "-m", "assembler", *args], env


def baseline_imports() -> list[str]:
    return [sys.executable, "-c", "import yaml, jsonschema, jinja2, click"]


def assemble(*args: str) -> list[str]:
    return [str(BIN / "assemble"), *args]


def report(title: str, rows: Sequence[tuple[str, str]]) -> None:
    print(f"\n## {title}")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")
