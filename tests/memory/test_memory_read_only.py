"""A read-only open of a store without its index (a fresh clone), issue 21: nothing is
read until something is asked, and the index it then needs is built once, in the
user's cache, and reused by later read-only opens; the store itself is never written,
and an open that may not keep an index (a dry run) writes nothing anywhere.

Real files; which record files are read is counted at `read_record_file`.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemoryStore, make_record
from assembler.memory import _scan as scan_module
from assembler.memory._kept import kept_index_home
from assembler.memory.index import INDEX_DIR
from assembler.memory.records import to_markdown


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Record files read (by name), and directory scans (under "<scan>")."""
    counts: Counter[str] = Counter()
    real_read, real_scandir = scan_module.read_record_file, os.scandir

    def reading(path: Path, *args: object) -> object:
        found = real_read(path, *args)  # type: ignore[arg-type]
        counts[Path(path).name] += 1  # read (a missing file is not counted)
        return found

    def scanning(path: object) -> object:
        counts["<scan>"] += 1
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_module, "read_record_file", reading)
    monkeypatch.setattr(os, "scandir", scanning)
    return counts


def clone(policy: MemoryPolicy, names: list[str]) -> Path:
    """A store as a fresh clone has it: record files, no index."""
    policy.store.mkdir(parents=True)
    for name in names:
        record = make_record(name, f"about {name}", "project", f"{name} body")
        (policy.store / f"{name}.md").write_text(to_markdown(record), encoding="utf-8")
    return policy.store


def listing(store: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in store.rglob("*")}


def test_a_read_only_open_reads_nothing_until_asked(
    policy: MemoryPolicy, reads: Counter[str]
) -> None:
    store = clone(policy, ["alpha", "beta"])
    looking = MemoryStore.open(store, policy, read_only=True)
    assert reads == {}  # `render --dry-run` without `--input` stops here
    record = looking.get("beta")  # one record: its file alone
    assert record is not None and record.description == "about beta"
    assert looking.get("gamma") is None and looking.get("../alpha") is None
    assert reads == {"beta.md": 1}
    assert looking.names() == ("alpha", "beta")  # a listing needs the index
    assert reads["<scan>"] == 1 and reads["alpha.md"] == 1
    looking.close()


def test_the_index_is_built_once_kept_outside_the_store_and_reused(
    policy: MemoryPolicy, reads: Counter[str]
) -> None:
    store = clone(policy, ["alpha", "beta", "gamma"])
    before = listing(store)
    first = MemoryStore.open(store, policy, read_only=True, keep_index=True)
    assert first.names() == ("alpha", "beta", "gamma")
    first.close()
    assert sum(n for name, n in reads.items() if name.endswith(".md")) == 3
    home = kept_index_home(os.path.realpath(store))
    assert (home / INDEX_DIR).is_dir()
    assert listing(store) == before  # nothing written in the store
    assert not (store / INDEX_DIR).exists()

    reads.clear()
    again = MemoryStore.open(store, policy, read_only=True, keep_index=True)
    assert again.names() == ("alpha", "beta", "gamma")
    assert again.entries["beta"].description == "about beta"
    assert reads == {}  # the kept index agreed with the directory: no scan, no read
    again.close()

    record = make_record("delta", "added by hand", "user", "new")
    (store / "delta.md").write_text(to_markdown(record), encoding="utf-8")
    reads.clear()
    later = MemoryStore.open(store, policy, read_only=True, keep_index=True)
    assert later.names() == ("alpha", "beta", "delta", "gamma")
    assert reads == {"<scan>": 1, "delta.md": 1}  # only the new file was read
    later.close()
    assert not (store / INDEX_DIR).exists()


def test_a_writable_open_still_builds_the_store_s_own_index(policy: MemoryPolicy) -> None:
    store = clone(policy, ["alpha"])
    MemoryStore.open(store, policy, read_only=True, keep_index=True).names()
    writer = MemoryStore.open(store, policy)
    assert writer.names() == ("alpha",)
    assert (store / INDEX_DIR).is_dir()
    writer.upsert(make_record("beta", "about beta", "project", "b"))
    writer.close()
    looking = MemoryStore.open(store, policy, read_only=True)
    assert looking.names() == ("alpha", "beta")  # from the store's own index now
    looking.close()


def test_without_a_usable_cache_the_index_is_built_in_memory(
    policy: MemoryPolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("ASSEMBLER_CACHE_DIR", str(blocker))
    store = clone(policy, ["alpha", "beta"])
    looking = MemoryStore.open(store, policy, read_only=True, keep_index=True)
    assert looking.names() == ("alpha", "beta")
    assert any("no index could be kept" in note for note in looking.diagnostics)
    looking.close()
    assert not (store / INDEX_DIR).exists()


def test_a_dry_run_open_writes_nothing_anywhere_but_uses_a_kept_index(
    policy: MemoryPolicy, reads: Counter[str]
) -> None:
    """`render --dry-run --input` opens without `keep_index`: with no kept index it
    indexes in memory and writes nothing, not even in the user's cache; with one that
    agrees with the files it reads that, and no record file."""
    store = clone(policy, ["alpha", "beta"])
    home = kept_index_home(os.path.realpath(store))
    dry = MemoryStore.open(store, policy, read_only=True)
    assert dry.names() == ("alpha", "beta")
    dry.close()
    assert not home.exists()
    MemoryStore.open(store, policy, read_only=True, keep_index=True).names()  # memory list
    kept = listing(home)
    reads.clear()
    dry = MemoryStore.open(store, policy, read_only=True)
    assert dry.names() == ("alpha", "beta")
    assert reads == {}
    dry.close()
    (store / "gamma.md").write_text(
        to_markdown(make_record("gamma", "by hand", "user", "g")), encoding="utf-8"
    )
    dry = MemoryStore.open(store, policy, read_only=True)
    assert dry.names() == ("alpha", "beta", "gamma")  # reconciled in a copy in memory
    dry.close()
    assert listing(home) == kept
