"""The fresh copy, the manifest pointed at it, fingerprints, and the summary figures."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from assembler.eval.records import RunRecord
from assembler.eval.summary import format_summary, percentile
from assembler.eval.workspace import (
    SCRATCH_PREFIX,
    copy_workspace,
    differences,
    digests,
    rebase,
    scratch_directory,
    sweep_stale,
)
from assembler.permissions.path_patterns import compile_path_pattern
from assembler.validation.load import load_manifest


def test_rebase_moves_what_lives_in_the_workspace_and_leaves_code_where_it_was(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    (root / "ws" / "skills").mkdir(parents=True)
    (root / "shared-skills").mkdir()
    (root / "ext.py").write_text("def setup(api, options):\n    pass\n")
    (root / "agent.yaml").write_text(
        "version: 1\nname: a\nidentity: x\nworkspace: ws\n"
        "skills: [ws/skills, shared-skills]\n"
        "memory: {store: notes/memory}\n"
        "extensions: [{path: ext.py}]\n"
    )
    manifest = load_manifest(root / "agent.yaml")
    copy = tmp_path / "copy" / "ws"
    moved = rebase(manifest, copy)
    assert moved.workspace == copy
    assert moved.skills == (copy / "skills", root / "shared-skills")
    assert moved.memory is not None and moved.memory.store == copy / "notes" / "memory"
    assert moved.path == manifest.path  # the manifest, and so the code it names, stays
    assert moved.extensions == manifest.extensions
    assert moved.identity == manifest.identity and moved.tools == manifest.tools


def test_the_copy_keeps_links_as_links(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not copied")
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.txt").write_text("a")
    os.symlink(outside, source / "link.txt")
    os.symlink("sub", source / "dirlink")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copy = copy_workspace(source, scratch)
    assert copy == scratch / "src"
    assert (copy / "sub" / "a.txt").read_text() == "a"
    assert os.readlink(copy / "link.txt") == str(outside)
    assert os.readlink(copy / "dirlink") == "sub"
    everything = [compile_path_pattern("**")]
    assert digests(copy, everything) == digests(source, everything)
    found = digests(copy, everything)
    assert found["link.txt"] == f"link:{outside}"
    assert found["dirlink"] == "link:sub"
    assert set(found) == {"link.txt", "dirlink", "sub/a.txt"}


def test_differences_name_changed_removed_and_added_files() -> None:
    before = {"a.py": "1", "b.py": "2", "c.txt": "3"}
    after = {"a.py": "1", "b.py": "X", "d.py": "4", "c.txt": "changed too"}
    pattern = [compile_path_pattern("*.py")]
    assert differences(before, after, pattern) == (["b.py"], [], ["d.py"])
    assert differences(before, {}, pattern) == ([], ["a.py", "b.py"], [])


def test_percentiles_are_measured_values() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0


def record(task: str, repeat: int, status: str, seconds: float, tokens: int) -> RunRecord:
    return RunRecord.from_dict(
        {
            "eval": "e",
            "task": task,
            "repeat": repeat,
            "status": status,
            "turns": 2,
            "usage": {"input_tokens": tokens, "output_tokens": 0},
            "duration_s": seconds,
            "error": "boom" if status == "error" else "",
        }
    )


def test_the_summary_table() -> None:
    records = [
        record("fast", 1, "passed", 0.1, 100),
        record("fast", 2, "failed", 0.3, 300),
        record("slow", 1, "error", 2.0, 0),
    ]
    assert format_summary(records, wall=2.5).splitlines() == [
        "task            passed  rate  turns  tokens     p50     p95",
        "fast               1/2   50%    2.0     200  100 ms  300 ms",
        "slow     0/1 (1 error)    0%    2.0       0   2.0 s   2.0 s",
        "-------  -------------  ----  -----  ------  ------  ------",
        "overall  1/3 (1 error)   33%    2.0     133  300 ms   2.0 s",
        "3 runs; 400 tokens (400 in, 0 out); wall time 2.5 s",
        "FAIL fast#2: did not pass",
        "ERROR slow#1: boom",
    ]
    assert format_summary([]) == "no runs recorded"


def test_copies_left_by_dead_processes_of_this_host_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    mine = scratch_directory()
    assert mine.parent == tmp_path and f"-{os.getpid()}-" in mine.name
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = Path(str(mine).replace(f"-{os.getpid()}-", f"-{dead.pid}-"))
    left.mkdir()
    (left / "ws").mkdir()
    elsewhere = tmp_path / f"{SCRATCH_PREFIX}otherhost-{dead.pid}-abcdefgh"
    elsewhere.mkdir()
    assert sweep_stale() == 1
    assert not left.exists()
    assert mine.exists() and elsewhere.exists()
