"""Issue 20, item 23: a `scripted:` replay file is read within a size limit.

`load_script` read the whole file into memory before parsing it: a 3 GB file (or a link
to `/dev/zero`, or a FIFO, which blocked) ended `assemble run` and `assemble validate`
of an eval file with `MemoryError`, an internal error. The file is now read by the
manifests' rules, checked first to be a regular file of at most 1 MiB, and anything
else is one clear error naming the file.

The commands run in a child process with a memory limit and a timeout, so that a
regression fails the test instead of exhausting the machine or hanging it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

MEMORY_LIMIT = 1 << 30  # bytes of address space for the child process


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def assemble(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler", *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=cwd,
        env=dict(os.environ), preexec_fn=_limit_memory, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    with (tmp_path / "huge.yaml").open("wb") as huge:
        huge.write(b"- text: hello\n")
        huge.truncate(3 << 30)  # sparse: three gigabytes that take no disk
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: replayed\nidentity: You help.\nmodel: scripted:huge.yaml\n"
        "tools: {sets: []}\n"
    )
    (tmp_path / "t.eval.yaml").write_text(
        "version: 1\nagent: agent.yaml\ntasks:\n  - {id: a, prompt: hi, model: 'scripted:huge.yaml'}\n"
    )
    return tmp_path


def test_run_with_a_huge_replay_is_a_clear_error(project: Path) -> None:
    done = assemble("run", "agent.yaml", "--no-session", "--trust", "-p", "hi", cwd=project)
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr and "MemoryError" not in done.stderr
    assert "huge.yaml" in done.stderr
    assert "3,221,225,472 bytes" in done.stderr and "limited to 1 MiB" in done.stderr


def test_validating_an_eval_file_with_a_huge_replay_is_a_located_error(project: Path) -> None:
    done = assemble("validate", "t.eval.yaml", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "internal error" not in done.stdout + done.stderr
    assert (
        "t.eval.yaml:4:" in done.stdout and "the replay script huge.yaml is invalid" in done.stdout
    )
    assert "limited to 1 MiB" in done.stdout


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_replay_that_is_not_a_regular_file_is_refused(kind: str, project: Path) -> None:
    replay = project / "replay.yaml"
    if kind == "fifo":
        os.mkfifo(replay)
    else:
        os.symlink("/dev/zero", replay)
    manifest = (project / "agent.yaml").read_text().replace("huge.yaml", "replay.yaml")
    (project / "agent.yaml").write_text(manifest)
    done = assemble("run", "agent.yaml", "--no-session", "--trust", "-p", "hi", cwd=project)
    assert done.returncode == 1, done.stderr
    assert "replay.yaml" in done.stderr and "internal error" not in done.stderr
    # `validate` stops `run` before the replay is read; the reader refuses it on its own.
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD, str(replay)],
        capture_output=True, text=True, timeout=60, check=False, preexec_fn=_limit_memory,
    )  # fmt: skip
    assert loaded.stdout.strip() == f"{replay}: error: is not a regular file", loaded.stderr


LOAD = """
import sys
from assembler.errors import ManifestError
from assembler.providers.scripted import load_script
try:
    load_script(sys.argv[1])
except ManifestError as e:
    print(e.issues[0].format())
"""
