"""The interactive session's start-up, and finding context files at growing depths.

Issue 27: the interactive session now reads lines in the main thread and runs its
event loop in a thread of its own, and context files are found from the repository
root down to the workspace.

1. Start-up: from starting `assemble run` on a pseudo-terminal to its first prompt,
   then `/exit`, against the baseline `assemble run -p` of the same manifest (build,
   one scripted answer, exit) in the same run. Wall time, medians, interleaved.
   `BENCH_BEFORE=/path/to/an/older/checkout` measures that checkout's interactive
   start-up too (its package first on `PYTHONPATH`), for a before/after figure.
2. Finding context files: `ResourceLoader.reload()` with a workspace 10, 100 and 1,000
   directories below the repository root, an `AGENTS.md` in every directory,
   against the same reload with `context_discovery: false` (the workspace's file only).

Run: `python bench/bench_interactive.py`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import median_seconds, report

from assembler.resources.loader import ResourceLoader
from assembler.validation.load import load_manifest

RUNS = 15


def _project(root: Path) -> Path:
    (root / "work").mkdir()
    (root / "reply.yaml").write_text("- text: Hi.\n" * 3)
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: bench\nidentity: You help.\nworkspace: work\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly]}\n"
    )
    return manifest


def _interactive_once(manifest: Path, env: dict[str, str]) -> float:
    master, slave = os.openpty()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "run", str(manifest), "--no-session"],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    while b"> " not in seen:
        seen += os.read(master, 4096)
    elapsed = time.perf_counter() - start
    os.write(master, b"/exit\r")
    try:
        while os.read(master, 4096):
            pass
    except OSError:
        pass
    process.wait(timeout=30)
    os.close(master)
    return elapsed


def _one_shot_once(manifest: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(manifest), "--no-session", "-p", "hi"],
        env=env, capture_output=True, check=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - start


def startup(root: Path) -> list[tuple[str, str]]:
    manifest = _project(root)
    env = {**os.environ, "TERM": "xterm", "ASSEMBLER_DATA_DIR": str(root / "data")}
    for _ in range(2):
        _interactive_once(manifest, env)
        _one_shot_once(manifest, env)
    before = os.environ.get("BENCH_BEFORE")
    older = {**env, "PYTHONPATH": before} if before else None
    interactive: list[float] = []
    one_shot: list[float] = []
    earlier: list[float] = []
    for _ in range(RUNS):
        interactive.append(_interactive_once(manifest, env))
        one_shot.append(_one_shot_once(manifest, env))
        if older is not None:
            earlier.append(_interactive_once(manifest, older))
    ours, base = statistics.median(interactive), statistics.median(one_shot)
    rows = [
        (
            "interactive, to the first prompt",
            f"{ours * 1e3:6.0f} ms, {ours / base:4.2f}x `run -p` ({base * 1e3:.0f} ms)",
        )
    ]
    if earlier:
        old = statistics.median(earlier)
        rows.append(
            (
                f"the same from {before}",
                f"{old * 1e3:6.0f} ms, {old / base:4.2f}x `run -p`",
            )
        )
    return rows


def discovery(root: Path) -> list[tuple[str, str]]:
    rows = []
    for depth in (10, 100, 1_000):
        repo = root / f"repo{depth}"
        (repo / ".git").mkdir(parents=True)
        directory = repo
        for _ in range(depth):
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "AGENTS.md").write_text("Rules of this directory.\n")
            directory = directory / "d"
        directory.mkdir(parents=True)
        (directory / "AGENTS.md").write_text("The workspace's rules.\n")
        found = repo / "found.yaml"
        found.write_text(
            f"version: 1\nname: b\nidentity: x\nworkspace: {directory.relative_to(repo)}\n"
            "context_discovery: {user: false}\n"
        )
        off = repo / "off.yaml"
        off.write_text(found.read_text().replace("{user: false}", "false"))
        on_loader = ResourceLoader(load_manifest(found))
        off_loader = ResourceLoader(load_manifest(off))
        count = len(on_loader.reload().context_files)
        repeat = max(5, 2_000 // depth)
        ours = median_seconds(on_loader.reload, repeat=repeat)
        base = median_seconds(off_loader.reload, repeat=repeat)
        rows.append(
            (
                f"{depth:>5,} directories deep ({count:,} files)",
                f"{ours * 1e3:8.2f} ms, {ours / base:6.1f}x the workspace's file only "
                f"({base * 1e3:.2f} ms), {ours / count * 1e6:.0f} µs per file",
            )
        )
    return rows


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ASSEMBLER_CONFIG_DIR"] = str(Path(folder) / "config")
        if not os.environ.get("BENCH_SKIP_STARTUP"):
            report("interactive start-up (pseudo-terminal)", startup(Path(folder)))
        report("context files found from the repository root", discovery(Path(folder)))
        # 1,000 nested directories are deeper than shutil.rmtree's recursion goes
        subprocess.run(["rm", "-rf", folder], check=False)
