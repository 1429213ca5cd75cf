"""The store's persistent index: what is known of every record without reading it.

One SQLite file (standard library), `<store>/.index/index.sqlite3`, derived from the
record files and never the truth: deleted, damaged or from another `INDEX_VERSION`, it
is rebuilt from them. It lives in a subdirectory so that its own writes (SQLite's
rollback journal comes and goes beside it) never change the store directory's
modification time, which the store uses to notice records added, removed or replaced
behind its back (see `assembler.memory._sync`).

Tables:

    meta      count, total_length (sum of record lengths, for BM25), changes (bumped by
              every write, so another process can tell it is out of date), and the
              store directory's (inode, mtime_ns) as of the last time the index
              matched it
    records   per record: description, type, body length in characters, the file's
              (inode, mtime_ns, size) stamp, its weighted term count and term ids
              (`_index_writer.pack_ids`)
    invalid   `.md` files that are not valid records, with their stamps and why, so a
              corrupt file is reported on every open without being re-read
    terms     every term with its document frequency
    postings  (term, record) -> count and the record's length, clustered by term: a
              keyword selection reads the postings of the question's words only

An add touches one row per distinct term of the record, wherever the store's size, so
its cost does not grow with the store; a new process answers a keyword question from
the postings of a few terms instead of rebuilding an inverted index of every record.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from assembler.errors import MemoryStoreError
from assembler.memory._index_types import DirectoryStamp, IndexEntry, InvalidFile, Stamp
from assembler.memory._index_writer import IndexWriter, chunks

INDEX_DIR: Final = ".index"
INDEX_FILE: Final = "index.sqlite3"
# Identifies the file as ours (`PRAGMA application_id`, "AAMI"); bump `INDEX_VERSION`
# when the layout or `keyword.record_terms` changes: an index of another version is
# rebuilt from the files rather than misread.
APPLICATION_ID: Final = 0x41414D49
INDEX_VERSION: Final = 2

Posting = tuple[int, int, int]
"""(record id, term count, record length) for one term."""

_SCHEMA: Final = f"""
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {INDEX_VERSION};
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('count', 0), ('total_length', 0), ('changes', 0),
    ('dir_inode', -1), ('dir_mtime_ns', -1);
CREATE TABLE records (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT NOT NULL,
    type TEXT NOT NULL, chars INTEGER NOT NULL, inode INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, length INTEGER NOT NULL,
    terms BLOB NOT NULL);
CREATE TABLE invalid (
    file TEXT PRIMARY KEY, inode INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL, message TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, df INTEGER NOT NULL);
CREATE TABLE postings (
    term INTEGER NOT NULL, record INTEGER NOT NULL, count INTEGER NOT NULL,
    length INTEGER NOT NULL, PRIMARY KEY (term, record)) WITHOUT ROWID;
"""
_ENTRY_COLUMNS: Final = "name, description, type, chars, inode, mtime_ns, size"


class IndexState(NamedTuple):
    """The index's summary row: read once per open or turn to tell whether it is current."""

    records: int
    total_length: int
    changes: int
    directory: DirectoryStamp | None


class IndexFailureError(MemoryStoreError):
    """SQLite failed while reading or writing the index (disk full, a lock held too
    long, a file damaged while open)."""


class UnusableIndexError(Exception):
    """The index file cannot be used as it is: damaged (or left by a crashed writer,
    which a read-only open may not roll back), or of another version."""

    def __init__(self, message: str, *, damaged: bool = True) -> None:
        super().__init__(message)
        self.damaged = damaged


def index_path(store: Path) -> Path:
    return store / INDEX_DIR / INDEX_FILE


class StoreIndex:
    """The index of one store. Reads run in short transactions of their own; writes go
    through `writing()`, one transaction per change. The caller serialises writers
    (the store's lock); SQLite's own locking keeps readers consistent meanwhile."""

    def __init__(self, connection: sqlite3.Connection, *, writable: bool) -> None:
        self._db = connection
        self.writable = writable
        # One connection per store object; a tool may call the store from a worker
        # thread, so every use of the connection holds this lock.
        self._lock = threading.RLock()

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, store: Path) -> tuple[StoreIndex, str]:
        """Open the index for writing, creating it when missing. Returns the index and
        how it was found: "current" (as left by the last writer), "missing", "foreign"
        (another version) or "damaged"; in the last three cases it is new and empty,
        to be filled from the files."""
        path = index_path(store)
        path.parent.mkdir(exist_ok=True)
        found = "missing"
        if path.exists():
            try:
                return cls(_check(_connect(str(path), uri=False)), writable=True), "current"
            except UnusableIndexError as e:
                found = "damaged" if e.damaged else "foreign"
                _remove_index(path)
        connection = _connect(str(path), uri=False)
        connection.executescript(f"BEGIN; {_SCHEMA} COMMIT;")
        return cls(connection, writable=True), found

    @classmethod
    def open_existing(cls, store: Path, *, writable: bool = False) -> StoreIndex:
        """Open the index as it is, creating nothing. Read-only unless `writable`: then
        nothing is written either, except by the caller's own writes. Raises
        `FileNotFoundError` when there is none, `UnusableIndexError` when it cannot be
        used as it is (damaged, another version, or a crashed writer's journal that a
        read-only connection may not roll back)."""
        path = index_path(store)
        if not path.is_file():
            raise FileNotFoundError(path)
        mode = "rw" if writable else "ro"
        connection = _connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
        return cls(_check(connection), writable=writable)

    @classmethod
    def in_memory(cls, copy_of: StoreIndex | None = None) -> StoreIndex:
        """A private index in memory: empty, or a copy of `copy_of` (a read-only store
        reconciles its view there, since it may not write the file)."""
        connection = _connect(":memory:", uri=False)
        if copy_of is None:
            connection.executescript(f"BEGIN; {_SCHEMA} COMMIT;")
        else:
            with copy_of._guard():
                copy_of._db.backup(connection)
        return cls(connection, writable=True)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        with self._lock:
            try:
                yield
            except sqlite3.Error as e:
                raise IndexFailureError(f"the memory index failed: {e}") from e

    def close(self) -> None:
        with self._guard():
            self._db.close()

    # -- reading -------------------------------------------------------------------

    @contextlib.contextmanager
    def reading(self) -> Iterator[StoreIndex]:
        """One consistent view for several reads (a keyword ranking reads term
        statistics, then postings: a write in between must not mix two states)."""
        with self._guard():
            self._db.execute("BEGIN")
            try:
                yield self
            finally:
                self._db.execute("COMMIT")

    def state(self) -> IndexState:
        with self._guard():
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        inode, mtime = meta["dir_inode"], meta["dir_mtime_ns"]
        directory = (inode, mtime) if inode >= 0 else None
        return IndexState(meta["count"], meta["total_length"], meta["changes"], directory)

    def corpus(self) -> tuple[int, int]:
        """(number of records, sum of their lengths)."""
        state = self.state()
        return state.records, state.total_length

    def entry(self, name: str) -> IndexEntry | None:
        with self._guard():
            row = self._db.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM records WHERE name = ?", (name,)
            ).fetchone()
        return IndexEntry(*row) if row is not None else None

    def entries_after(self, name: str, limit: int) -> list[IndexEntry]:
        """Up to `limit` entries whose names sort after `name`, in name order (a
        catalog read page by page holds no lock between pages)."""
        with self._guard():
            rows = self._db.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM records WHERE name > ? ORDER BY name LIMIT ?",
                (name, limit),
            ).fetchall()
        return [IndexEntry(*row) for row in rows]

    def entries_by_id(self, ids: Iterable[int]) -> dict[int, IndexEntry]:
        found: dict[int, IndexEntry] = {}
        with self._guard():
            for chunk in chunks(list(ids)):
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(
                    f"SELECT id, {_ENTRY_COLUMNS} FROM records WHERE id IN ({marks})", chunk
                ):
                    found[row[0]] = IndexEntry(*row[1:])
        return found

    def stamps(self) -> dict[str, Stamp]:
        """Every record's file stamp, by name (a full scan compares them with the disk)."""
        with self._guard():
            rows = self._db.execute("SELECT name, inode, mtime_ns, size FROM records")
            return {row[0]: row[1:] for row in rows}

    def invalid(self) -> dict[str, InvalidFile]:
        with self._guard():
            rows = self._db.execute("SELECT * FROM invalid ORDER BY file").fetchall()
        return {row[0]: InvalidFile(*row) for row in rows}

    def term_stats(self, terms: Sequence[str]) -> dict[str, tuple[int, int]]:
        """term -> (term id, number of records holding it), for the terms present."""
        found: dict[str, tuple[int, int]] = {}
        with self._guard():
            for chunk in chunks(list(terms)):
                marks = ",".join("?" * len(chunk))
                for term, term_id, df in self._db.execute(
                    f"SELECT term, id, df FROM terms WHERE df > 0 AND term IN ({marks})", chunk
                ):
                    found[term] = (term_id, df)
        return found

    def postings(self, term_id: int) -> list[Posting]:
        with self._guard():
            return self._db.execute(
                "SELECT record, count, length FROM postings WHERE term = ?", (term_id,)
            ).fetchall()

    def postings_for(self, term_id: int, records: Sequence[int]) -> list[Posting]:
        """The postings of one term, for these records only (point lookups)."""
        rows: list[Posting] = []
        with self._guard():
            for chunk in chunks(list(records)):
                marks = ",".join("?" * len(chunk))
                rows.extend(
                    self._db.execute(
                        "SELECT record, count, length FROM postings "
                        f"WHERE term = ? AND record IN ({marks})",
                        (term_id, *chunk),
                    )
                )
        return rows

    # -- writing -------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[IndexWriter]:
        """One write transaction: every change in the block lands together or not at
        all, and bumps the change counter once."""
        with self._guard():
            self._db.execute("BEGIN IMMEDIATE")
            writer = IndexWriter(self._db)
            try:
                yield writer
                writer.flush()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


def _connect(target: str, *, uri: bool) -> sqlite3.Connection:
    # Autocommit mode: transactions are begun explicitly (`reading`, `writing`), so no
    # read ever holds a lock longer than its own statements.
    try:
        connection = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise UnusableIndexError(str(e)) from e
    try:
        connection.execute("PRAGMA busy_timeout = 10000")
        # The rollback journal (not WAL): WAL keeps -wal and -shm files that a read-only
        # open would have to create. FULL: a power cut never leaves a damaged index.
        connection.execute("PRAGMA synchronous = FULL")
        # 32 MB of page cache (used only as needed): a large batch of records touches
        # postings pages all over the file.
        connection.execute("PRAGMA cache_size = -32768")
    except sqlite3.Error as e:
        connection.close()
        raise UnusableIndexError(str(e)) from e
    return connection


def _check(connection: sqlite3.Connection) -> sqlite3.Connection:
    """`connection` if it holds an index of this version, else `UnusableIndexError`."""
    try:
        application = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if application != APPLICATION_ID or version != INDEX_VERSION:
            raise UnusableIndexError(
                f"another format or version ({application:#x}/{version})", damaged=False
            )
        connection.execute("SELECT value FROM meta WHERE key = 'changes'").fetchone()
    except sqlite3.Error as e:
        connection.close()
        raise UnusableIndexError(str(e)) from e
    except UnusableIndexError:
        connection.close()
        raise
    return connection


def _remove_index(path: Path) -> None:
    for leftover in (path, path.with_name(path.name + "-journal")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
