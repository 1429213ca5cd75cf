"""Issue 11, item 12: however `assemble run` ends, its running command ends with it.

A real `assemble run -p` process (scripted model) whose `bash` call starts detached
jobs and then sleeps gets SIGTERM, SIGHUP, two Ctrl-C or SIGKILL; afterwards no
process carrying the command's marker may be alive. Before the fix the command, and
everything it started, survived all four.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from procs import live_processes_with

import assembler

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc"),
]


def _script(shipping: Path, seconds: str) -> None:
    command = (
        f"setsid sleep {seconds} > /dev/null 2>&1 < /dev/null & "
        f"( sleep {seconds} > /dev/null 2>&1 & ) ; "
        f"nohup sleep {seconds} > /dev/null 2>&1 & "
        f"trap '' TERM HUP INT; sleep {seconds}"
    )
    (shipping / "agents" / "slow.script.yaml").write_text(
        f'- tool_calls: [{{name: bash, arguments: {{command: "{command}"}}}}]\n'
        "- text: never reached\n"
    )


def _start(shipping: Path, seconds: str, *, rpc: bool = False) -> subprocess.Popen[str]:
    _script(shipping, seconds)
    root = str(Path(assembler.__file__).resolve().parents[1])
    manifest = str(shipping / "agents" / "shipping-fixer.yaml")
    model = ["--model", "scripted:slow.script.yaml"]
    command = (
        ["rpc", manifest, "--trust", *model]
        if rpc
        else ["run", manifest, "--trust", *model, "-p", "go"]
    )
    # Started as from a terminal: under `nohup` (a CI runner's, say) SIGHUP would be
    # ignored by inheritance, which `assemble` rightly keeps.
    inherited = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        process = _popen(command, shipping, root, rpc=rpc)
    finally:
        signal.signal(signal.SIGHUP, inherited)
    if rpc:
        assert process.stdin is not None
        process.stdin.write('{"id": 1, "method": "prompt", "params": {"text": "go"}}\n')
        process.stdin.flush()
    deadline = time.monotonic() + 60
    while len(live_processes_with(seconds)) < 4 and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    assert len(live_processes_with(seconds)) >= 4, "the bash call never started its jobs"
    return process


def _popen(command: list[str], shipping: Path, root: str, *, rpc: bool) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "assembler", *command],
        stdin=subprocess.PIPE if rpc else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": root},
        cwd=shipping,
    )


def _gone(seconds: str) -> list[int]:
    """Markers still alive after the tree had time to be killed (SIGTERM, grace, KILL)."""
    deadline = time.monotonic() + 20
    while live_processes_with(seconds) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live_processes_with(seconds)


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminating_signal_kills_the_running_command(
    shipping: Path, sig: signal.Signals
) -> None:
    seconds = f"300.{uuid.uuid4().int % 10**9:09d}"
    process = _start(shipping, seconds)
    process.send_signal(sig)
    code, err = _finish(process)
    assert _gone(seconds) == []
    assert code == 128 + sig, err
    assert "Traceback" not in err


def test_ctrl_c_twice_kills_the_running_command(shipping: Path) -> None:
    seconds = f"300.{uuid.uuid4().int % 10**9:09d}"
    process = _start(shipping, seconds)
    process.send_signal(signal.SIGINT)
    time.sleep(0.2)  # the second one while the first is still being handled
    process.send_signal(signal.SIGINT)
    _finish(process)
    assert _gone(seconds) == []


def test_kill_9_of_assemble_kills_the_running_command(shipping: Path) -> None:
    seconds = f"300.{uuid.uuid4().int % 10**9:09d}"
    process = _start(shipping, seconds)
    process.kill()
    code, _ = _finish(process)
    assert code == -signal.SIGKILL
    assert _gone(seconds) == []


def test_sigterm_to_assemble_rpc_kills_the_running_command(shipping: Path) -> None:
    seconds = f"300.{uuid.uuid4().int % 10**9:09d}"
    process = _start(shipping, seconds, rpc=True)
    process.send_signal(signal.SIGTERM)
    code, err = _finish(process)
    assert _gone(seconds) == []
    assert code == 128 + signal.SIGTERM, err
