"""Ctrl-C stops a real `assemble eval` cleanly: recorded runs stay, nothing is left
behind, and the same command resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from eval_project import Project, answer, call
from procs import live_processes_with


@pytest.mark.slow
def test_sigint_keeps_the_recorded_runs_and_the_same_command_resumes(
    project: Project, tmp_path: Path
) -> None:
    go = tmp_path / "go"  # once it exists, the slow tasks are quick
    slow = project.script(
        "slow", [call("bash", command=f"test -f {go} || sleep 30.5839"), answer("Slept.")]
    )
    tasks = [{"id": f"quick-{n}", "prompt": "?"} for n in (1, 2, 3)]
    tasks += [{"id": f"slow-{n}", "prompt": "?", "model": slow} for n in (1, 2)]
    file = project.eval_file(tasks)
    out = project.root / "r.jsonl"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONUTF8": "1"}
    command = [sys.executable, "-m", "assembler", "eval", str(file), "--out", str(out), "--trust"]
    process = subprocess.Popen(
        [*command, "--concurrency", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not live_processes_with("sleep 30.5839"):  # slow-1 is running
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the slow task never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted: 3 of 5 run(s) finished and recorded; run the same command with" in stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task"], r["status"]) for r in records] == [
        ("quick-1", "passed"),
        ("quick-2", "passed"),
        ("quick-3", "passed"),
    ]
    assert "overall" in stdout  # the summary of what was recorded
    assert live_processes_with("sleep 30.5839") == []
    assert list(scratch.glob("assemble-eval-*")) == []  # every workspace copy removed

    go.touch()
    resumed = subprocess.run(
        command, check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.splitlines()[0] == f"resuming: 3 of 5 run(s) already in {out}; 2 to do"
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["task"] for r in records) == [
        "quick-1", "quick-2", "quick-3", "slow-1", "slow-2",
    ]  # fmt: skip


@pytest.mark.slow
def test_ctrl_c_on_a_local_cluster_stops_the_runs_on_the_workers(
    project: Project, tmp_path: Path
) -> None:
    """Ctrl-C in a terminal signals the whole process group, workers included: the
    client alone answers, stopping the runs on the workers before closing them."""
    slow = project.script("slow", [call("bash", command="sleep 30.6217"), answer("Slept.")])
    file = project.eval_file([{"id": f"slow-{n}", "prompt": "?", "model": slow} for n in (1, 2, 3)])
    out = project.root / "r.jsonl"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONUTF8": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "eval", str(file), "--out", str(out),
         "--scheduler", "local:2", "--trust"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group, as a terminal gives it
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while len(live_processes_with("sleep 30.6217")) < 2:  # both workers busy
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the runs never started"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert "interrupted: 0 of 3 run(s) finished and recorded" in stderr
    assert live_processes_with("sleep 30.6217") == []
    assert list(scratch.glob("assemble-eval-*")) == []
