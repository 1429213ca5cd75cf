"""The store on disk: files, the derived index, corruption, locking, the journal."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from index_dump import index_dump

from assembler.errors import MemoryStoreError
from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemoryRecord, MemoryStore, make_record
from assembler.memory.index import IndexFailureError, StoreIndex, index_path
from assembler.memory.journal import JOURNAL_FILE
from assembler.memory.keyword import record_terms
from assembler.memory.records import from_markdown

Snapshot = Callable[[Path], dict[str, object]]
RecordFactory = Callable[..., MemoryRecord]


def index_rows(store_dir: Path) -> dict[str, tuple[object, ...]]:
    rows: dict[str, tuple[object, ...]] = index_dump(store_dir)["records"]
    return rows


def assert_index_consistent(store_dir: Path) -> None:
    """The index on disk lists exactly the record files, with their current stat,
    their fields and their term counts, and totals that add up."""
    dump = index_dump(store_dir)
    rows = dump["records"]
    files = {p.stem: p for p in store_dir.glob("*.md")}
    assert set(rows) == set(files)
    frequencies: dict[str, int] = {}
    total_length = 0
    for name, path in files.items():
        stat = path.stat()
        description, type_, chars, inode, mtime_ns, size, length, terms = rows[name]
        assert (inode, mtime_ns, size) == (stat.st_ino, stat.st_mtime_ns, stat.st_size), name
        assert length == sum(terms.values())
        record = from_markdown(path.read_text("utf-8"), expected_name=name)
        assert (description, type_, chars) == (record.description, record.type, len(record.body))
        assert terms == record_terms(record.name, record.description, record.body)
        for term in terms:
            frequencies[term] = frequencies.get(term, 0) + 1
        total_length += sum(terms.values())
    assert dump["df"] == frequencies
    assert (dump["count"], dump["total_length"]) == (len(files), total_length)


def test_open_creates_the_directory_and_a_gitignore(policy: MemoryPolicy) -> None:
    store = MemoryStore.open(policy.store, policy)
    assert store.path.is_dir()
    assert len(store) == 0
    ignored = (store.path / ".gitignore").read_text().splitlines()
    assert {".index/", ".lock", ".journal.json*", ".tmp-*"} <= set(ignored)


def test_round_trip_through_the_files(policy: MemoryPolicy, rec: RecordFactory) -> None:
    store = MemoryStore.open(policy.store, policy)
    first = rec("deploy-staging", "Run make deploy.\nNeeds VPN.", type="project")
    second = rec("user-likes-pnpm", "Use pnpm.", type="user")
    assert store.upsert(first) is True
    assert store.upsert(second) is True

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("deploy-staging", "user-likes-pnpm")
    assert reopened.get("deploy-staging") == first
    assert reopened.get("user-likes-pnpm") == second
    assert reopened.get("missing") is None
    assert reopened.diagnostics == ()
    entry = reopened.entries["deploy-staging"]
    assert (entry.description, entry.type, entry.chars) == (
        first.description,
        "project",
        len(first.body),
    )


def test_the_record_file_on_disk_is_exactly_this(policy: MemoryPolicy) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert(
        make_record("prefers-pnpm", "The user prefers pnpm over npm", "user", "Always use pnpm.")
    )
    assert (policy.store / "prefers-pnpm.md").read_text("utf-8") == (
        "---\n"
        "name: prefers-pnpm\n"
        "description: The user prefers pnpm over npm\n"
        "type: user\n"
        "---\n"
        "Always use pnpm.\n"
    )
    assert sorted(p.name for p in policy.store.iterdir()) == [
        ".gitignore",
        ".index",
        ".lock",
        "prefers-pnpm.md",
    ]


def test_upsert_replaces_add_refuses_remove_deletes(store: MemoryStore, rec: RecordFactory) -> None:
    store.upsert(rec("a", "one"))
    assert store.upsert(rec("a", "two")) is False
    assert store.get("a") == rec("a", "two")
    with pytest.raises(MemoryStoreError, match="already exists"):
        store.add(rec("a", "three"))
    store.add(rec("b"))
    assert store.remove("a") is True
    assert store.remove("a") is False
    assert store.names() == ("b",)
    assert not (store.path / "a.md").exists()
    assert_index_consistent(store.path)


def test_a_store_refuses_bodies_over_its_own_limit(
    make_policy: Callable[..., MemoryPolicy],
) -> None:
    policy = make_policy(record_max_bytes=300)
    store = MemoryStore.open(policy.store, policy)
    with pytest.raises(MemoryStoreError, match="over the limit of 300 bytes"):
        store.upsert(make_record("big", "d", "user", "x" * 301))
    assert len(store) == 0


def test_missing_index_is_rebuilt(
    policy: MemoryPolicy, rec: RecordFactory, snapshot: Snapshot
) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert_many([rec("a"), rec("b"), rec("c")])
    before = snapshot(policy.store)
    index_path(policy.store).unlink()

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("a", "b", "c")
    assert snapshot(policy.store) == before  # the same index, rebuilt from the files
    assert reopened.diagnostics == ()


def test_unreadable_or_foreign_index_is_rebuilt(policy: MemoryPolicy, rec: RecordFactory) -> None:
    MemoryStore.open(policy.store, policy).upsert(rec("a"))
    index_path(policy.store).write_text("{ not a database")
    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("a",)
    assert any("index was unreadable; rebuilt" in d for d in reopened.diagnostics)
    assert_index_consistent(policy.store)
    reopened.close()

    with sqlite3.connect(index_path(policy.store)) as db:
        db.execute("PRAGMA user_version = 999")  # an index written by another version
    db.close()
    again = MemoryStore.open(policy.store, policy)
    assert again.names() == ("a",)
    assert again.diagnostics == ()  # quietly rebuilt
    assert_index_consistent(policy.store)


def test_an_index_of_an_earlier_version_is_removed(
    policy: MemoryPolicy, rec: RecordFactory
) -> None:
    policy.store.mkdir(parents=True)
    (policy.store / "index.json").write_text('{"format": "assembler-memory-index"}')
    old_ignore = (
        "# Written by agent-assembler. The record files (*.md) are the memory;\nindex.json\n"
    )
    (policy.store / ".gitignore").write_text(old_ignore)
    store = MemoryStore.open(policy.store, policy)
    store.upsert(rec("a"))
    assert not (policy.store / "index.json").exists()
    assert ".index/" in (policy.store / ".gitignore").read_text().splitlines()


def test_stale_index_is_brought_up_to_date(policy: MemoryPolicy, rec: RecordFactory) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert_many([rec("edited"), rec("deleted"), rec("kept")])
    # Edited, added and deleted by hand, without the store knowing.
    edited = policy.store / "edited.md"
    edited.write_text(edited.read_text().replace("about edited", "changed by hand"))
    (policy.store / "added.md").write_text(
        "---\nname: added\ndescription: added by hand\ntype: user\n---\nhello\n"
    )
    (policy.store / "deleted.md").unlink()

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("added", "edited", "kept")
    assert reopened.entries["edited"].description == "changed by hand"
    assert reopened.entries["added"].description == "added by hand"
    assert_index_consistent(policy.store)


def test_refresh_sees_what_another_process_wrote(policy: MemoryPolicy, rec: RecordFactory) -> None:
    mine = MemoryStore.open(policy.store, policy)
    theirs = MemoryStore.open(policy.store, policy)
    generation = mine.generation
    assert mine.refresh() is False
    theirs.upsert(rec("new"))
    assert mine.refresh() is True
    assert mine.names() == ("new",)
    assert mine.generation > generation
    assert mine.refresh() is False


def test_a_writer_never_loses_what_another_store_object_wrote(
    policy: MemoryPolicy, rec: RecordFactory
) -> None:
    first = MemoryStore.open(policy.store, policy)
    second = MemoryStore.open(policy.store, policy)
    first.upsert(rec("from-first"))
    second.upsert(rec("from-second"))  # second's view is stale; the lock makes it reload
    assert MemoryStore.open(policy.store, policy).names() == ("from-first", "from-second")
    assert_index_consistent(policy.store)


def test_corrupt_record_is_reported_and_skipped_and_nothing_is_deleted(
    policy: MemoryPolicy, rec: RecordFactory
) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert_many([rec("good-one"), rec("broken"), rec("good-two")])
    broken = policy.store / "broken.md"
    broken.write_text("---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    (policy.store / "not-utf8.md").write_bytes(b"---\n\xff\xfe\n---\n")
    (policy.store / "README.md").write_text("# notes\n")

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("good-one", "good-two")
    assert reopened.get("good-one") == rec("good-one")
    diagnostics = reopened.diagnostics
    assert len(diagnostics) == 3
    assert any(
        str(broken) in d and "invalid frontmatter" in d and "skipped" in d for d in diagnostics
    )
    assert any("not-utf8.md: not UTF-8 text" in d for d in diagnostics)
    assert any("README.md: not a memory record" in d for d in diagnostics)
    assert broken.exists()
    assert (policy.store / "README.md").exists()

    # The problems are remembered in the index: reported again on every open, without
    # reading the files or writing the index again.
    index_stat = index_path(policy.store).stat()
    again = MemoryStore.open(policy.store, policy)
    assert again.diagnostics == diagnostics
    after = index_path(policy.store).stat()
    assert (after.st_ino, after.st_mtime_ns) == (index_stat.st_ino, index_stat.st_mtime_ns)

    # Fixing the file by hand brings the record back.
    broken.write_text("---\nname: broken\ndescription: fixed\ntype: user\n---\nbody\n")
    fixed = MemoryStore.open(policy.store, policy)
    assert "broken" in fixed
    assert len(fixed.diagnostics) == 2


def test_get_reports_a_file_damaged_after_open(store: MemoryStore, rec: RecordFactory) -> None:
    store.upsert(rec("a"))
    (store.path / "a.md").write_text("garbage")
    with pytest.raises(MemoryStoreError, match=r"a\.md: does not start with"):
        store.get("a")
    (store.path / "a.md").unlink()
    with pytest.raises(MemoryStoreError, match="cannot read"):
        store.get("a")


def test_temp_files_of_a_dead_writer_are_removed(policy: MemoryPolicy, rec: RecordFactory) -> None:
    MemoryStore.open(policy.store, policy).upsert(rec("a"))
    leftover = policy.store / ".tmp-b.md.deadbeef"
    leftover.write_text("half a record")
    assert MemoryStore.open(policy.store, policy).names() == ("a",)
    assert not leftover.exists()


def test_apply_is_checked_before_anything_is_written(
    store: MemoryStore, rec: RecordFactory, snapshot: Snapshot
) -> None:
    store.upsert_many([rec("a"), rec("b")])
    before = snapshot(store.path)
    with pytest.raises(MemoryStoreError, match="no memory record named zzz"):
        store.apply([rec("c")], ["zzz"])
    with pytest.raises(MemoryStoreError, match="both written and deleted: a"):
        store.apply([rec("a")], ["a"])
    with pytest.raises(MemoryStoreError, match="written twice"):
        store.apply([rec("c"), rec("c")])
    with pytest.raises(MemoryStoreError, match="changed by someone else meanwhile: a"):
        store.apply([rec("c")], ["b"], expect={"a": (0, 0, 0)})
    assert snapshot(store.path) == before


def test_apply_writes_and_deletes_together(store: MemoryStore, rec: RecordFactory) -> None:
    store.upsert_many([rec("a"), rec("b"), rec("c")])
    store.apply([rec("a", "merged"), rec("d")], ["b", "c"])
    assert store.names() == ("a", "d")
    assert not (store.path / JOURNAL_FILE).exists()
    assert MemoryStore.open(store.path).names() == ("a", "d")
    assert_index_consistent(store.path)


def test_a_journal_left_by_a_crash_is_completed_on_open(
    store: MemoryStore, rec: RecordFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.upsert_many([rec("a"), rec("b"), rec("c")])
    real_write = store._write
    calls = 0

    def crash_on_second_record(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:  # 1: journal (the commit point), 2: first record, 3: second record
            raise MemoryStoreError("simulated crash")
        real_write(path, data, sync_directory=sync_directory)

    monkeypatch.setattr(store, "_write", crash_on_second_record)
    with pytest.raises(MemoryStoreError, match="simulated crash"):
        store.apply([rec("a", "new a"), rec("d", "new d")], ["b"])
    assert (store.path / JOURNAL_FILE).exists()

    reopened = MemoryStore.open(store.path)
    assert reopened.names() == ("a", "c", "d")
    assert reopened.get("a") == rec("a", "new a")
    assert reopened.get("d") == rec("d", "new d")
    assert not (store.path / JOURNAL_FILE).exists()
    assert any("completed a change interrupted earlier" in d for d in reopened.diagnostics)
    assert_index_consistent(store.path)


def test_a_damaged_journal_is_set_aside_and_records_left_alone(
    store: MemoryStore, rec: RecordFactory
) -> None:
    store.upsert_many([rec("a"), rec("b")])
    (store.path / JOURNAL_FILE).write_text("{ half")
    reopened = MemoryStore.open(store.path)
    assert reopened.names() == ("a", "b")
    assert (store.path / (JOURNAL_FILE + ".damaged")).exists()
    assert any("unreadable change journal" in d for d in reopened.diagnostics)


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from assembler.memory import MemoryRecord, MemoryStore, make_record

    path, prefix, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    store = MemoryStore.open(path)
    deadline = time.monotonic() + 30
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    for i in range(count):
        record = make_record(f"{prefix}-{i}", f"record {i} of {prefix}", "project", f"body {i}")
        store.upsert(record)
    """
)


@pytest.mark.slow
def test_two_processes_adding_200_records_each_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    MemoryStore.open(path)
    go = tmp_path / "go"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), prefix, "200", str(go)])
        for prefix in ("left", "right")
    ]
    time.sleep(0.3)  # both have started and are waiting
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=120) == 0

    assert_index_consistent(path)  # before any reopen could repair it
    expected = {f"{prefix}-{i}" for prefix in ("left", "right") for i in range(200)}
    assert set(index_rows(path)) == expected
    store = MemoryStore.open(path)
    assert set(store.names()) == expected
    assert store.diagnostics == ()
    assert store.get("left-199") == make_record(
        "left-199", "record 199 of left", "project", "body 199"
    )
    assert not [p for p in os.listdir(path) if p.startswith(".tmp-")]


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from assembler.memory import MemoryStore, make_record

    path, prefix = sys.argv[1], sys.argv[2]
    store = MemoryStore.open(path)
    for i in range(100_000):
        if i % 5 == 4:  # a batch: the journaled path
            batch = [
                make_record(f"{prefix}-{i}-{j}", f"batch {i}", "project", f"body {i} {j}")
                for j in range(3)
            ]
            store.upsert_many(batch)
            names = [record.name for record in batch]
        else:
            store.upsert(make_record(f"{prefix}-{i}", f"record {i}", "project", f"body {i}"))
            names = [f"{prefix}-{i}"]
        print(*names, flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(4))
def test_kill_9_during_adds_loses_no_committed_record(tmp_path: Path, round_: int) -> None:
    path = tmp_path / "memory"
    MemoryStore.open(path).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path), f"w{round_}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    done: list[str] = []
    for _ in range(7 + 5 * round_):  # a different moment in every round
        done.extend(writer.stdout.readline().split())
    writer.kill()  # SIGKILL, wherever it is
    writer.wait(timeout=30)
    done.extend(writer.stdout.read().split())

    # A read-only open sees every committed record and writes nothing.
    files_before = sorted(os.listdir(path))
    looking = MemoryStore.open(path, read_only=True)
    assert set(done) <= set(looking.names())
    assert sorted(os.listdir(path)) == files_before
    looking.close()

    store = MemoryStore.open(path)  # the next writer repairs what the kill left
    assert set(done) <= set(store.names())
    assert set(store.names()) == {p.stem for p in path.glob("*.md")}
    assert not [p for p in os.listdir(path) if p.startswith(".tmp-") or p == ".journal.json"]
    assert not [d for d in store.diagnostics if "unreadable" in d or "skipped" in d]
    assert_index_consistent(path)
    store.upsert(make_record("after-the-kill", "still works", "project", "yes"))
    assert_index_consistent(path)


# -- when the index is trusted, and when the files are looked at again -------------------


def test_an_open_that_finds_nothing_changed_reads_no_record_file(
    policy: MemoryPolicy, rec: RecordFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore.open(policy.store, policy).upsert_many([rec("a"), rec("b")])
    scanned: list[Path] = []
    real_scandir = os.scandir

    def watching(path: object) -> object:
        scanned.append(Path(str(path)))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", watching)
    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("a", "b")
    assert scanned == []  # the directory's stamp matched: no scan at all
    (policy.store / "c.md").write_text(
        "---\nname: c\ndescription: added by hand\ntype: user\n---\nhi\n"
    )
    assert MemoryStore.open(policy.store, policy).names() == ("a", "b", "c")
    assert scanned == [policy.store]


def test_a_running_session_sees_files_added_or_removed_by_hand(
    policy: MemoryPolicy, rec: RecordFactory
) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert_many([rec("a"), rec("b")])
    (policy.store / "b.md").unlink()
    (policy.store / "c.md").write_text(
        "---\nname: c\ndescription: added by hand\ntype: user\n---\nhi\n"
    )
    assert store.refresh() is True
    assert store.names() == ("a", "c")
    assert_index_consistent(policy.store)
    assert store.refresh() is False


def test_a_write_first_indexes_what_was_changed_by_hand(
    policy: MemoryPolicy, rec: RecordFactory
) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert(rec("a"))
    (policy.store / "by-hand.md").write_text(
        "---\nname: by-hand\ndescription: added by hand\ntype: user\n---\nhi\n"
    )
    store.upsert(rec("b"))  # no refresh in between: the write checks the directory
    assert store.names() == ("a", "b", "by-hand")
    assert_index_consistent(policy.store)


def test_an_edit_in_place_is_corrected_when_read_and_by_rescan(
    policy: MemoryPolicy, rec: RecordFactory
) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert_many([rec("a"), rec("b")])
    directory = policy.store.stat().st_mtime_ns
    for name in ("a", "b"):  # rewritten in place: the directory does not change
        with open(policy.store / f"{name}.md", "r+", encoding="utf-8") as handle:
            text = handle.read().replace(f"about {name}", f"edited {name}")
            handle.seek(0)
            handle.write(text)
            handle.truncate()
    assert policy.store.stat().st_mtime_ns == directory
    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.entries["a"].description == "about a"  # not looked at yet
    record = reopened.get("a")
    assert record is not None and record.description == "edited a"  # the file, always
    assert reopened.entries["a"].description == "edited a"  # and the index follows
    assert reopened.entries["b"].description == "about b"
    reopened.rescan()
    assert reopened.entries["b"].description == "edited b"
    assert_index_consistent(policy.store)


def test_read_only_opens_write_nothing_whatever_state_the_index_is_in(
    policy: MemoryPolicy, rec: RecordFactory, snapshot: Snapshot
) -> None:
    MemoryStore.open(policy.store, policy).upsert_many([rec("a"), rec("b")])
    hand = policy.store / "c.md"
    hand.write_text("---\nname: c\ndescription: by hand\ntype: user\n---\nhi\n")

    def listing() -> dict[str, int]:
        return {str(p): p.stat().st_mtime_ns for p in policy.store.rglob("*")}

    cases = {
        "stale": lambda: None,
        "damaged": lambda: index_path(policy.store).write_text("not a database"),
        "missing": lambda: shutil.rmtree(policy.store / ".index"),
    }
    for case, damage in cases.items():
        damage()
        before = listing()
        looking = MemoryStore.open(policy.store, policy, read_only=True)
        assert looking.names() == ("a", "b", "c"), case
        assert looking.entries["c"].description == "by hand"
        assert looking.refresh() is False
        with pytest.raises(MemoryStoreError, match="read-only"):
            looking.upsert(rec("d"))
        looking.close()
        assert listing() == before, case
    assert not (policy.store / ".index").exists()
    assert MemoryStore.open(policy.store, policy).names() == ("a", "b", "c")


def test_read_only_open_of_a_missing_store_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    looking = MemoryStore.open(tmp_path / "nowhere", read_only=True)
    assert (len(looking), looking.names(), looking.diagnostics) == (0, (), ())
    assert not (tmp_path / "nowhere").exists()


def test_an_index_that_fails_during_a_write_does_not_lose_the_record(
    policy: MemoryPolicy, rec: RecordFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore.open(policy.store, policy)
    store.upsert(rec("a"))

    def failing(self: StoreIndex) -> object:
        raise IndexFailureError("the memory index failed: disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(StoreIndex, "writing", failing)
        store.upsert(rec("b"))  # the file is the truth: the write succeeds
    assert (policy.store / "b.md").exists()
    assert any("disk I/O error; it is repaired" in d for d in store.diagnostics)
    assert store.refresh() is True  # the directory moved on without the index
    assert store.names() == ("a", "b")
    assert_index_consistent(policy.store)
