"""Issue 11, item 6: a memory directory from a hostile repository.

A record file that is a symbolic link to `/dev/zero` made `render --dry-run` die with
`MemoryError`; one linked to a record-shaped file outside the store put that file in
the prompt. The store now reads regular files inside itself only, never more than a
record can hold; a link is judged by where it leads.

The commands run in a child process with a memory limit and a timeout, so that a
regression fails the test instead of exhausting the machine or hanging it.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from assembler.errors import MemoryStoreError
from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemoryStore, make_record
from assembler.memory.selection import Selector

SECRET = "The deploy key is hunter2; never share it."
DEPLOY = "Deploys happen on Tuesdays after the standup."
RECORD = "---\nname: {name}\ndescription: {description}\ntype: project\n---\n{body}\n"
MEMORY_LIMIT = 1 << 30  # bytes of address space for the child process


def project(tmp_path: Path, strategy: str = "all") -> tuple[Path, Path]:
    """A manifest whose memory store holds one good record; returns (manifest, store)."""
    workspace = tmp_path / "repo"
    store = workspace / ".assembler" / "memory"
    store.mkdir(parents=True)
    (store / "deploy-day.md").write_text(
        RECORD.format(name="deploy-day", description="When deploys happen", body=DEPLOY)
    )
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: hostile\nidentity: You help.\nworkspace: repo\n"
        f"memory:\n  selection: {{strategy: {strategy}, max_records: 10}}\n"
    )
    return manifest, store


def outside_record(tmp_path: Path, name: str) -> Path:
    """A record-shaped file outside the store (someone's private notes, say)."""
    private = tmp_path / "private"
    private.mkdir(exist_ok=True)
    path = private / f"{name}.md"
    path.write_text(RECORD.format(name=name, description="deploy key", body=SECRET))
    return path


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def render(manifest: Path, question: str) -> subprocess.CompletedProcess[str]:
    code = "from assembler.cli.main import main; main()"
    command = [sys.executable, "-c", code, "render", "--dry-run", str(manifest)]
    return subprocess.run(
        [*command, "--input", question],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_memory,
        check=False,
    )


def snapshot(store: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.lstat().st_mtime_ns, p.lstat().st_size) for p in store.rglob("*")}


def test_a_record_linked_to_dev_zero_is_refused_by_render(tmp_path: Path) -> None:
    manifest, store = project(tmp_path)
    (store / "zero.md").symlink_to("/dev/zero")
    before = snapshot(store)
    result = render(manifest, "when do deploys happen?")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "MemoryError" not in result.stderr
    assert DEPLOY in result.stdout
    assert snapshot(store) == before  # a dry run writes nothing, not even an index


def test_a_record_linked_outside_the_store_stays_out_of_the_prompt(tmp_path: Path) -> None:
    manifest, store = project(tmp_path)
    (store / "deploy-key.md").symlink_to(outside_record(tmp_path, "deploy-key"))
    result = render(manifest, "what is the deploy key?")
    assert result.returncode == 0, result.stderr[-2000:]
    assert SECRET not in result.stdout
    assert "hunter2" not in result.stdout + result.stderr
    assert DEPLOY in result.stdout  # the store's own record is still shown


def test_a_fifo_named_like_a_record_does_not_block(tmp_path: Path) -> None:
    manifest, store = project(tmp_path)
    os.mkfifo(store / "pipe.md")
    result = render(manifest, "deploys")
    assert result.returncode == 0, result.stderr[-2000:]
    assert DEPLOY in result.stdout


OPEN_AND_REPORT = """
import json, sys
from assembler.memory import MemoryStore
store = MemoryStore.open(sys.argv[1], read_only=sys.argv[2] == "ro")
print(json.dumps({"names": store.names(), "diagnostics": store.diagnostics}))
"""


def test_the_store_reports_each_refused_file(tmp_path: Path) -> None:
    _manifest, store = project(tmp_path)
    (store / "zero.md").symlink_to("/dev/zero")
    (store / "deploy-key.md").symlink_to(outside_record(tmp_path, "deploy-key"))
    os.mkfifo(store / "pipe.md")
    (store / "nowhere.md").symlink_to(store / "missing" / "nowhere.md")
    (store / "huge.md").write_bytes(b"---\n" + b"x" * (4 << 20))
    for mode in ("ro", "rw"):
        child = subprocess.run(
            [sys.executable, "-c", OPEN_AND_REPORT, str(store), mode],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limit_memory,
            check=False,
        )
        assert child.returncode == 0, child.stderr[-2000:]
        report = json.loads(child.stdout)
        assert report["names"] == ["deploy-day"]
        problems = "\n".join(report["diagnostics"])
        assert f"zero.md: a symbolic link to {os.path.realpath('/dev/zero')}, outside" in problems
        assert "deploy-key.md: a symbolic link to" in problems and "outside" in problems
        assert "pipe.md: not a regular file" in problems
        assert "nowhere.md: a symbolic link to" in problems and "does not exist" in problems
        assert "huge.md: 4194308 bytes, more than a record file may hold" in problems
    assert (tmp_path / "private" / "deploy-key.md").read_text().endswith(SECRET + "\n")


def test_a_link_to_a_record_inside_the_store_is_followed(tmp_path: Path) -> None:
    _manifest, store = project(tmp_path)
    (store / "notes").mkdir()
    (store / "notes" / "standup.md").write_text(
        RECORD.format(name="standup", description="When the standup is", body="At 9:30.")
    )
    (store / "standup.md").symlink_to(Path("notes") / "standup.md")
    opened = MemoryStore.open(store)
    assert opened.names() == ("deploy-day", "standup")
    record = opened.get("standup")
    assert record is not None and record.body == "At 9:30."
    assert opened.diagnostics == ()


def test_a_record_swapped_for_an_outside_link_after_indexing_is_not_read(
    tmp_path: Path,
) -> None:
    _manifest, store = project(tmp_path)
    opened = MemoryStore.open(store)
    assert "deploy-day" in opened
    (store / "deploy-day.md").unlink()
    (store / "deploy-day.md").symlink_to(outside_record(tmp_path, "deploy-day"))
    with pytest.raises(MemoryStoreError, match="outside the memory store"):
        opened.get("deploy-day")
    policy = MemoryPolicy(store=store, strategy="all")
    chosen = asyncio.run(Selector(opened, policy).select("deploy"))
    assert chosen.entries == ()
    assert "outside the memory store" in chosen.diagnostics[0]


def test_writing_a_record_replaces_a_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    _manifest, store = project(tmp_path)
    outside = outside_record(tmp_path, "deploy-key")
    (store / "deploy-key.md").symlink_to(outside)
    opened = MemoryStore.open(store)
    opened.upsert(make_record("deploy-key", "Where the key is", "reference", "In the vault."))
    assert not (store / "deploy-key.md").is_symlink()
    assert outside.read_text().endswith(SECRET + "\n")
    record = opened.get("deploy-key")
    assert record is not None and record.body == "In the vault."
