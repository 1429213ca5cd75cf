"""The memory store: one Markdown file per record, a derived index, a lock.

On disk (default `<workspace>/.assembler/memory/`):

    <name>.md       one record: YAML frontmatter (name, description, type), then the body
    .index/         the index, a SQLite file derived from the records
                    (layout in `assembler.memory.index`)
    .lock           `flock`ed around every change
    .journal.json   only while a multi-record change is being applied
                    (`assembler.memory.journal`)
    .gitignore      keeps everything but the records out of git

The record files are the truth and the only thing meant for review in git: each
change is a small, readable diff, and two branches that each add a memory never
conflict. The index is a cache, rebuilt from the files whenever it is missing,
unreadable or from another version, and repaired whenever it disagrees with them.

How the index is kept true to the files, cheaply, is in `assembler.memory._sync`.

Concurrency: every change holds an exclusive `flock` on `.lock` and brings the index up
to date first, so two processes adding records at once lose nothing (and never need to
scan). Readers need no lock: record files are replaced by atomic renames and SQLite
keeps each read consistent. A writer killed at any point leaves either the old index
(and a directory that no longer matches it, so the next open scans) or the new one.

Opening read-only (`assemble render --dry-run`, `assemble memory list`) writes nothing
in the store: no index, lock, directory or `.gitignore`; it reads nothing until asked,
and a store with no index of its own is indexed once in the user's cache when the
caller allows it (`keep_index`: `assemble memory list`, not a dry run; see `_kept`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from assembler.errors import MemoryStoreError
from assembler.files import fsync_directory
from assembler.memory._index_types import IndexEntry, Stamp
from assembler.memory._scan import IndexedRecord, index_record, load_record
from assembler.memory._sync import IndexKeeper, directory_stamp
from assembler.memory.index import IndexFailureError, IndexState, StoreIndex, UnusableIndexError
from assembler.memory.journal import JOURNAL_FILE, encode_journal
from assembler.memory.records import (
    DEFAULT_MAX_BODY_BYTES,
    MemoryRecord,
    is_valid_name,
    to_markdown,
)

if TYPE_CHECKING:
    from assembler.manifest.model import MemoryPolicy

__all__ = ["JOURNAL_FILE", "InterruptedChangeError", "MemoryStore"]
_PAGE: Final = 512


class InterruptedChangeError(MemoryStoreError):
    """A multi-record change failed after its commit point: it is not lost, and the
    next writer or open completes it from the journal."""


class MemoryStore(IndexKeeper):
    """A directory of memory records. Use `MemoryStore.open`."""

    def __init__(
        self,
        path: Path,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        read_only: bool = False,
        keep_index: bool = False,
    ) -> None:
        self.path = path
        self.max_body_bytes = max_body_bytes
        self.read_only = read_only
        self.keep_index = keep_index
        self._root = os.path.realpath(path)
        self._current = StoreIndex.in_memory()
        self._deferred = False  # a read-only open not looked at yet (see `_index`)
        self._notes: list[str] = []
        self._changes = -1
        self.generation = 0
        """Counts the changes this object has seen, its own and other processes'."""

    # -- opening and reloading -------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        policy: MemoryPolicy | None = None,
        *,
        max_body_bytes: int | None = None,
        read_only: bool = False,
        keep_index: bool = False,
    ) -> MemoryStore:
        """Open (creating if needed) the store at `path`, its index brought up to date.

        `read_only` opens without writing anything in the store (see the module doc):
        a missing store is empty, and every write raises `MemoryStoreError`. With
        `keep_index`, a store without an index of its own gets one kept in the user's
        cache for later read-only opens (`_kept`); without, nothing is written anywhere.
        """
        limit = max_body_bytes or (policy.record_max_bytes if policy else DEFAULT_MAX_BODY_BYTES)
        store = cls(Path(path), max_body_bytes=limit, read_only=read_only, keep_index=keep_index)
        if read_only:
            # Nothing is read until something is asked: `render --dry-run` without
            # `--input` only needs the store for the `remember` tool.
            store._deferred = store.path.is_dir()
            if not store._deferred:
                store._seen(store._index.state())
            return store
        try:
            store.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise MemoryStoreError(f"cannot create the memory store {path}: {e.strerror}") from e
        store._root = os.path.realpath(store.path)
        store._connect()
        store._seen(store._index.state())
        return store

    def _connect(self) -> None:
        """Open the index on disk, and bring it up to date if it does not agree with the
        files. Only the first look is made without the lock: creating or replacing the
        index is done under it, so two processes never replace each other's."""
        try:
            self._index = StoreIndex.open_existing(self.path, writable=True)
        except (FileNotFoundError, UnusableIndexError):
            pass
        else:
            if self._is_current(self._index.state()):
                return
        with self._locked():
            self._index.close()
            try:
                self._index, found = StoreIndex.open(self.path)
            except (OSError, UnusableIndexError) as e:
                reason = e.strerror if isinstance(e, OSError) else e
                raise MemoryStoreError(
                    f"cannot open the memory index of {self.path}: {reason}"
                ) from e
            if found == "damaged":
                self._notes.append(f"{self.path}: the index was unreadable; rebuilt from the files")
            self._sync_locked(force=found != "current")

    @property
    def _index(self) -> StoreIndex:
        """The index, opened now if this is a read-only store's first use."""
        if self._deferred:
            self._deferred = False
            self._open_read_only()
            self._seen(self._current.state())
        return self._current

    @_index.setter
    def _index(self, index: StoreIndex) -> None:
        self._current = index

    def close(self) -> None:
        """Close the index; the store object is unusable afterwards."""
        self._deferred = False
        self._current.close()

    def rescan(self) -> None:
        """Stat every record file and re-read those that changed, even when the
        directory looks untouched (edits made in place); finish an interrupted change."""
        self._ensure_current(force=True)
        self._seen(self._index.state())

    def refresh(self) -> bool:
        """Pick up what other processes wrote and what was changed by hand in the
        directory: one stat and one read of the index's summary when nothing changed.
        Returns True when the store changed since this object last looked."""
        return self._seen(self._ensure_current())

    def _seen(self, state: IndexState) -> bool:
        if state.changes == self._changes:
            return False
        self._changes = state.changes
        self.generation += 1
        return True

    # -- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return self._index.state().records

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._index.entry(name) is not None

    def __iter__(self) -> Iterator[IndexEntry]:
        return self.iter_catalog()

    @property
    def entries(self) -> Mapping[str, IndexEntry]:
        """Every valid record's index entry, by name, read from the index on use."""
        return _Entries(self)

    def entry(self, name: str) -> IndexEntry | None:
        return self._index.entry(name)

    def iter_catalog(self) -> Iterator[IndexEntry]:
        """All entries in name order, read page by page (stop early for free)."""
        last = ""
        while True:
            page = self._index.entries_after(last, _PAGE)
            yield from page
            if len(page) < _PAGE:
                return
            last = page[-1].name

    def catalog(self) -> tuple[IndexEntry, ...]:
        """All entries sorted by name: the store's stable order."""
        return tuple(self.iter_catalog())

    def names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.iter_catalog())

    @property
    def index(self) -> StoreIndex:
        """The index (for keyword ranking, which reads its postings)."""
        return self._index

    @property
    def diagnostics(self) -> tuple[str, ...]:
        """Problems found in the store: corrupt, misnamed or refused files (skipped),
        a rebuilt index. Reported, never fatal."""
        problems = (
            f"{self.path / name}: {bad.message}" for name, bad in self._index.invalid().items()
        )
        return (*self._notes, *problems)

    def get(self, name: str) -> MemoryRecord | None:
        """Read and validate one record from its file; None if the store has no such
        record. When the file was edited since it was indexed, the index is corrected.

        `MemoryStoreError` when its file was removed or damaged since the index was
        read (the caller decides whether that is fatal; selection reports and skips).
        A read-only store not looked at yet reads the one file, not the index.
        """
        if self._deferred:
            return self._read_one(name)
        entry = self._index.entry(name)
        if entry is None:
            return None
        path = self._record_path(name)
        try:
            record, stamp = load_record(path, self._root, name, self.max_body_bytes)
        except OSError as e:
            raise MemoryStoreError(f"{path}: cannot read: {e.strerror}") from e
        except MemoryStoreError as e:
            raise MemoryStoreError(f"{path}: {e}") from e
        if stamp != entry.stamp and not self.read_only:
            try:
                with self._locked():
                    if self._index.entry(name) == entry:  # nobody re-indexed it meanwhile
                        with self._index.writing() as writer:
                            writer.put([index_record(record, stamp)])
            except IndexFailureError as e:  # the record was read; the index can wait
                self._notes.append(f"{self.path}: {e}")
        return record

    def _read_one(self, name: str) -> MemoryRecord | None:
        if not is_valid_name(name):
            return None
        path = self._record_path(name)
        try:
            return load_record(path, self._root, name, self.max_body_bytes)[0]
        except FileNotFoundError:
            return None
        except OSError as e:
            raise MemoryStoreError(f"{path}: cannot read: {e.strerror}") from e
        except MemoryStoreError as e:
            raise MemoryStoreError(f"{path}: {e}") from e

    # -- writing ---------------------------------------------------------------------

    def upsert(self, record: MemoryRecord) -> bool:
        """Create or replace the record with this name; True when it was created."""
        with self._locked():
            self._sync_locked()
            created = record.name not in self
            self._commit({record.name: record}, ())
        return created

    def add(self, record: MemoryRecord) -> None:
        """Create a record; `MemoryStoreError` if one with this name exists."""
        with self._locked():
            self._sync_locked()
            if record.name in self:
                raise MemoryStoreError(f"memory record {record.name!r} already exists")
            self._commit({record.name: record}, ())

    def upsert_many(self, records: Iterable[MemoryRecord]) -> None:
        """Create or replace several records, all or none (one lock, one transaction)."""
        self.apply(records, ())

    def remove(self, name: str) -> bool:
        """Delete a record; False when there was none."""
        with self._locked():
            self._sync_locked()
            if name not in self:
                return False
            self._commit({}, (name,))
        return True

    def apply(
        self,
        writes: Iterable[MemoryRecord],
        deletes: Iterable[str] = (),
        *,
        expect: Mapping[str, Stamp | None] | None = None,
    ) -> None:
        """Write and delete records in one all-or-nothing change (see the journal).

        `expect` maps names to the stamp the caller based its change on (None: "did
        not exist"); if any record changed meanwhile nothing is written and
        `MemoryStoreError` says which. Deleting an unknown record is an error too.
        """
        records: dict[str, MemoryRecord] = {}
        for record in writes:
            if record.name in records:
                raise MemoryStoreError(f"memory record {record.name!r} is written twice")
            records[record.name] = record
        removed = tuple(dict.fromkeys(deletes))
        both = sorted(set(records) & set(removed))
        if both:
            raise MemoryStoreError(f"memory records both written and deleted: {', '.join(both)}")
        with self._locked():
            self._sync_locked()
            changed = [name for name, stamp in (expect or {}).items() if self._stamp(name) != stamp]
            if changed:
                raise MemoryStoreError(
                    f"memory record(s) changed by someone else meanwhile: {', '.join(changed)}; "
                    "nothing was changed"
                )
            unknown = [name for name in removed if name not in self]
            if unknown:
                raise MemoryStoreError(f"no memory record named {', '.join(unknown)}")
            self._commit(records, removed)

    def _stamp(self, name: str) -> Stamp | None:
        entry = self._index.entry(name)
        return entry.stamp if entry is not None else None

    def _commit(self, records: Mapping[str, MemoryRecord], deletes: Sequence[str]) -> None:
        """With the lock held and the index current: journal, files, index."""
        texts: dict[str, str] = {}
        for name, record in records.items():
            size = len(record.body.encode("utf-8"))
            if size > self.max_body_bytes:
                raise MemoryStoreError(
                    f"memory record {name!r}: body is {size} bytes, over the limit of "
                    f"{self.max_body_bytes} bytes (memory.record_max_bytes)"
                )
            texts[name] = to_markdown(record)
        if not texts and not deletes:
            return
        journaled = len(texts) + len(deletes) > 1
        if journaled:
            self._write(self._journal_path, encode_journal(texts, deletes))
        try:
            stamps = self._write_records(texts, deletes)
        except MemoryStoreError as e:
            if not journaled:
                raise
            raise InterruptedChangeError(
                f"{e}; the change is committed and will be completed when the store is next opened"
            ) from e
        if journaled:
            self._unlink(self._journal_path)
            fsync_directory(self.path)
        written = [index_record(record, stamps[name]) for name, record in records.items()]
        self._update_index(written, deletes)

    def _update_index(self, written: Sequence[IndexedRecord], deletes: Sequence[str]) -> None:
        """Record a change that is already on disk, with the directory as it now is."""
        directory = directory_stamp(self.path)
        files = {f"{entry.name}.md" for entry, _terms in written} | {f"{n}.md" for n in deletes}
        try:
            invalid = self._index.invalid()
            with self._index.writing() as writer:
                for name in deletes:
                    writer.delete(name)
                writer.put(written)
                if files & invalid.keys():
                    writer.set_invalid(bad for file, bad in invalid.items() if file not in files)
                writer.set_directory(directory)
        except IndexFailureError as e:
            # The change is on disk, which is what counts; the index still holds the
            # directory's old stamp, so the next look at the store scans and repairs it.
            self._notes.append(f"{self.path}: {e}; it is repaired from the files next time")


class _Entries(Mapping[str, IndexEntry]):
    """`MemoryStore.entries`: a mapping view that reads the index on use."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __getitem__(self, name: str) -> IndexEntry:
        entry = self._store.entry(name)
        if entry is None:
            raise KeyError(name)
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._store

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self) -> Iterator[str]:
        return (entry.name for entry in self._store.iter_catalog())
