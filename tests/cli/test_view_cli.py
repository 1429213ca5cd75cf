"""`assemble view` and `assemble report` on the command line."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble
from view_corpus import results_file


def test_report_writes_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = results_file(tmp_path / "old.jsonl", {"fix": ["passed"]})
    new = results_file(tmp_path / "new.jsonl", {"fix": ["failed"]})
    out = tmp_path / "report.html"
    done = assemble(capsys, "report", str(new), "--compare", str(old), "-o", str(out))
    assert done.code == 0, done.err
    assert done.out == f"report: {out}\n"
    text = out.read_text()
    assert text.startswith("<!doctype html>") and "1 worse" in text and "<script" not in text


def test_report_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    done = assemble(capsys, "report", str(notes), "-o", str(tmp_path / "r.html"))
    assert done.code == 1
    assert done.err == f"error: {notes} is neither a session file (.jsonl) nor eval results\n"
    session = tmp_path / "s.jsonl"
    session.write_text('{"type":"session","version":1,"id":"s"}\n')
    done = assemble(capsys, "report", str(session), "--compare", str(session), "-o", "r.html")
    assert done.code == 1 and "compares two eval results files" in done.err


def test_view_refuses_a_file_that_is_not_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"type":"session","version":1,"id":"s"}\n')
    done = assemble(capsys, "view", str(notes))
    assert done.code == 1
    assert "is not an eval results file" in done.err


def test_view_serves_until_interrupted(tmp_path: Path) -> None:
    """The real command: it prints its URL, answers it, and stops on Ctrl-C."""
    env = {**os.environ, "ASSEMBLER_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "view"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"assemble view: http://127\.0\.0\.1:(\d+)(/\?token=\S+)\n", line)
        assert match is not None, line
        conn = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=30)
        conn.request("GET", match.group(2))
        response = conn.getresponse()
        assert response.status == 200 and b"0 session file(s)" in response.read()
        conn.close()
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert err.endswith("stopped\n")
