"""Issue 11, item 20: after `kill -9` during a tool call, the session holds the
assistant message with that call and the trace a record of it, because both are
written before the tool runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import assemble

from assembler.sessions.store import Session

SCRIPT = """\
- text: Running a long command.
  tool_calls:
    - name: bash
      arguments: {command: "sleep 30"}
- text: done
"""


def test_a_run_killed_mid_tool_leaves_the_call_in_the_session_and_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "long.script.yaml").write_text(SCRIPT)
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: killed\nidentity: You help.\nworkspace: work\n"
        "model: scripted:long.script.yaml\ntools: {sets: [coding]}\n"
    )
    sessions = tmp_path / "sessions"
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "run", str(manifest), "-p", "go",
         "--session-dir", str(sessions), "--trust"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            traces = list(sessions.glob("*.trace.jsonl"))
            if traces and traces[0].read_text().strip():
                break
            time.sleep(0.05)
        else:
            pytest.fail("the tool never started")
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)

    (trace,) = sessions.glob("*.trace.jsonl")
    (record,) = [json.loads(line) for line in trace.read_text().splitlines()]
    assert record["phase"] == "started" and record["tool"] == "bash"
    assert record["proposed"]["arguments"] == {"command": "sleep 30"}
    session_file = trace.with_name(trace.name.replace(".trace.jsonl", ".jsonl"))
    session = Session.load(session_file)
    stored = [e.payload["message"] for e in session.entries() if e.type == "message"]
    assert stored[-1]["role"] == "assistant"
    assert stored[-1]["tool_calls"][0]["arguments"] == {"command": "sleep 30"}
    shown = assemble(capsys, "trace", str(trace))
    assert "executed: started; the run stopped before it finished" in shown.out
