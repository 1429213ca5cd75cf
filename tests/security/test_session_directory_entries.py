"""Issue 20, item 22: what lies in a session directory is read as data, within bounds.

`sessions list` and `--continue` opened every `*.jsonl` in the directory and read its
first line: a FIFO named like a session blocked them for ever, a link to `/dev/zero` (or
a file of gigabytes without a newline) made them read until memory ran out. Entries
that are not regular files are now skipped, the header line is read up to a cap, and
the rest of a listed session is read in bounded pieces.

Each command runs in a child process with a memory limit and a timeout, so a regression
fails the test instead of exhausting the machine or hanging it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

MEMORY_LIMIT = 768 << 20  # bytes of address space for the child process
HUGE = 3 << 30  # a sparse file: no disk used, and more than the child may hold
LONG_LINE = 1 << 30  # a line the child cannot hold (kept small: it is read through)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def assemble(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler", *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=cwd,
        env=dict(os.environ), preexec_fn=_limit_memory, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def header(session_id: str, workspace: Path, **extra: object) -> str:
    return json.dumps(
        {
            "type": "session", "version": 1, "id": session_id, "agent": "keeper",
            "manifest": None, "model": "scripted:reply.yaml", "created": "2026-01-01T00:00:00Z",
            "workspace": str(workspace.resolve()), **extra,
        }
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "reply.yaml").write_text("- text: Again.\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: keeper\nidentity: You help.\nmodel: scripted:reply.yaml\n"
        "tools: {sets: []}\n"
    )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    good = sessions / "20260101T000000-good.jsonl"
    message = {"role": "user", "content": "remember the good session"}
    good.write_text(
        header("20260101T000000-good", tmp_path)
        + "\n"
        + json.dumps(
            {
                "type": "message",
                "id": "e1",
                "parent": None,
                "time": "2026-01-01T00:00:01Z",
                "message": message,
            }
        )
        + "\n"
    )
    os.utime(good, (1_700_000_000, 1_700_000_000))  # the oldest: every hostile one is newer
    os.symlink("/dev/zero", sessions / "20260102T000000-zero.jsonl")
    os.mkfifo(sessions / "20260103T000000-fifo.jsonl")
    with (sessions / "20260104T000000-endless.jsonl").open("wb") as endless:
        endless.truncate(HUGE)  # gigabytes of NUL bytes, no newline
    with (sessions / "20260105T000000-long.jsonl").open("wb") as long_tail:
        long_tail.write((header("20260105T000000-long", tmp_path, agent="other") + "\n").encode())
        long_tail.truncate(LONG_LINE)  # a valid header, then one endless line
    return tmp_path


def test_sessions_list_skips_what_is_not_a_session_file(project: Path) -> None:
    done = assemble(
        "sessions", "list", "--session-dir", "sessions", "--format", "json", cwd=project
    )
    assert done.returncode == 0, done.stderr
    listed = {s["id"]: s for s in json.loads(done.stdout)}
    assert set(listed) == {"20260101T000000-good", "20260105T000000-long"}
    assert listed["20260101T000000-good"]["first_message"] == "remember the good session"
    assert listed["20260105T000000-long"]["entries"] == 1  # the endless line, not read whole


def test_continue_skips_what_is_not_a_session_file(project: Path) -> None:
    done = assemble(
        "run", "agent.yaml", "--session-dir", "sessions", "--continue", "-p", "again",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Again." in done.stdout
    good = (project / "sessions" / "20260101T000000-good.jsonl").read_text()
    assert good.count("\n") > 2  # the run continued the one real session


def test_show_refuses_a_fifo_instead_of_waiting(project: Path) -> None:
    done = assemble(
        "sessions", "show", "sessions/20260103T000000-fifo.jsonl", "--session-dir", "sessions",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 1
    assert "not a regular file" in done.stderr
