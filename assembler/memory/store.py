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

Telling whether it disagrees must not cost a look at every file: a stat is a few
microseconds, so a hundred thousand records would take most of a second before the
first selection. The index therefore records the store directory's (inode, mtime_ns)
as of its last agreement with the files, and every open and every turn compares it with
the directory (one stat). Adding, deleting or renaming a file changes it, and so does
saving a file by replacing it (git, and most editors and tools); a difference starts a
scan that stats every file and reads only those whose stamp changed. Files found
invalid are re-stated on every open, so a fix by hand is seen at once. An edit that
rewrites a record in place without touching the directory is seen when that record is
read (its body is always read from the file, and the index entry is corrected then) and
by the next scan; `rescan()` forces one.

Concurrency: every change holds an exclusive `flock` on `.lock`, checks the directory
first (so what someone else changed by hand is indexed before the change), writes the
files, then updates the index and its directory stamp in one transaction. Two processes
adding records at once therefore lose nothing and never scan. Readers need no lock:
record files are replaced by atomic renames and SQLite keeps each read consistent. A
writer killed at any point leaves either the old index (and a directory that no longer
matches it, so the next open scans) or the new one.

Opening read-only (`assemble render --dry-run`, `assemble memory list`) writes nothing
at all: no index, lock, directory or `.gitignore`. It uses the index as it is when it
agrees with the files; otherwise it reconciles a private copy in memory, and when there
is no index (a fresh clone: the index is not committed) it builds one in memory from the
files, which costs what a rebuild costs. A pending journal is left for the next writer.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from assembler.errors import MemoryStoreError
from assembler.files import fsync_directory
from assembler.memory._files import (
    atomic_write,
    exclusive_lock,
    file_stamp,
)
from assembler.memory._scan import index_record, load_record, scan
from assembler.memory.index import (
    DirectoryStamp,
    IndexEntry,
    IndexState,
    Stamp,
    StoreIndex,
    UnusableIndexError,
)
from assembler.memory.journal import (
    JOURNAL_FILE,
    DamagedJournalError,
    encode_journal,
    read_journal,
)
from assembler.memory.records import DEFAULT_MAX_BODY_BYTES, MemoryRecord, to_markdown

if TYPE_CHECKING:
    from assembler.manifest.model import MemoryPolicy

LOCK_FILE: Final = ".lock"
GITIGNORE_FILE: Final = ".gitignore"
LEGACY_INDEX_FILE: Final = "index.json"
_GITIGNORE_HEADER: Final = "# Written by agent-assembler."
_GITIGNORE: Final = (
    f"{_GITIGNORE_HEADER} The record files (*.md) are the memory;\n"
    "# .index/ is rebuilt from them, the others exist only while writing.\n"
    ".index/\n.lock\n.journal.json*\n.tmp-*\nindex.json\n"
)
_PAGE: Final = 512


class InterruptedChangeError(MemoryStoreError):
    """A multi-record change failed after its commit point: it is not lost, and the
    next writer or open completes it from the journal."""


class MemoryStore:
    """A directory of memory records. Use `MemoryStore.open`."""

    def __init__(
        self, path: Path, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, read_only: bool = False
    ) -> None:
        self.path = path
        self.max_body_bytes = max_body_bytes
        self.read_only = read_only
        self._root = os.path.realpath(path)
        self._index = StoreIndex.in_memory()
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
    ) -> MemoryStore:
        """Open (creating if needed) the store at `path`, its index brought up to date.

        `read_only` opens without writing anything (see the module doc): a missing
        store is empty, and every write raises `MemoryStoreError`.
        """
        limit = max_body_bytes or (policy.record_max_bytes if policy else DEFAULT_MAX_BODY_BYTES)
        store = cls(Path(path), max_body_bytes=limit, read_only=read_only)
        if read_only:
            if store.path.is_dir():
                store._open_read_only()
            store._seen(store._index.state())
            return store
        try:
            store.path.mkdir(parents=True, exist_ok=True)
            store._root = os.path.realpath(store.path)
            store._index, found = StoreIndex.open(store.path)
        except (OSError, UnusableIndexError) as e:
            reason = e.strerror if isinstance(e, OSError) else e
            raise MemoryStoreError(f"cannot open the memory store {path}: {reason}") from e
        if found == "damaged":
            store._notes.append(f"{store.path}: the index was unreadable; rebuilt from the files")
        store._ensure_current(force=found != "current")
        store._seen(store._index.state())
        return store

    def close(self) -> None:
        """Close the index; the store object is unusable afterwards."""
        self._index.close()

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
        """
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
            with self._locked():
                if self._index.entry(name) == entry:  # nobody re-indexed it meanwhile
                    with self._index.writing() as writer:
                        writer.put([index_record(record, stamp)])
        return record

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

    def _update_index(
        self, written: Sequence[tuple[IndexEntry, dict[str, int]]], deletes: Sequence[str]
    ) -> None:
        """Record a change that is already on disk, with the directory as it now is."""
        directory = _directory_stamp(self.path)
        invalid = self._index.invalid()
        files = {f"{entry.name}.md" for entry, _terms in written} | {f"{n}.md" for n in deletes}
        with self._index.writing() as writer:
            for name in deletes:
                writer.delete(name)
            writer.put(written)
            if files & invalid.keys():
                writer.set_invalid(bad for file, bad in invalid.items() if file not in files)
            writer.set_directory(directory)

    def _write_records(self, texts: Mapping[str, str], deletes: Iterable[str]) -> dict[str, Stamp]:
        stamps: dict[str, Stamp] = {}
        for name, text in texts.items():
            path = self._record_path(name)
            self._write(path, text.encode("utf-8"), sync_directory=False)
            try:
                stamps[name] = file_stamp(path)
            except OSError as e:
                raise MemoryStoreError(f"cannot stat {path}: {e.strerror}") from e
        for name in deletes:
            self._unlink(self._record_path(name))
        fsync_directory(self.path)
        return stamps

    # Seams for tests that simulate a crash part-way through a change.
    def _write(self, path: Path, data: bytes, *, sync_directory: bool = True) -> None:
        if self.read_only:
            raise MemoryStoreError(f"the memory store {self.path} is open read-only")
        try:
            atomic_write(path, data, sync_directory=sync_directory)
        except OSError as e:
            raise MemoryStoreError(f"cannot write {path}: {e.strerror or e}") from e

    def _unlink(self, path: Path) -> None:
        if self.read_only:
            raise MemoryStoreError(f"the memory store {self.path} is open read-only")
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            raise MemoryStoreError(f"cannot delete {path}: {e.strerror or e}") from e

    # -- keeping the index in step with the files ------------------------------------

    @property
    def _journal_path(self) -> Path:
        return self.path / JOURNAL_FILE

    def _record_path(self, name: str) -> Path:
        return self.path / f"{name}.md"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self.read_only:
            raise MemoryStoreError(f"the memory store {self.path} is open read-only")
        with exclusive_lock(self.path / LOCK_FILE):
            yield

    def _is_current(self, state: IndexState) -> bool:
        """Whether the index agrees with the directory, judged without a scan: the
        directory's stamp, no pending journal, no invalid file changed."""
        if state.directory is None or _directory_stamp(self.path) != state.directory:
            return False
        if self._journal_path.exists():
            return False
        for file, bad in self._index.invalid().items():
            try:
                if file_stamp(self.path / file) != bad.stamp:
                    return False
            except OSError:
                return False
        return True

    def _ensure_current(self, *, force: bool = False) -> IndexState:
        state = self._index.state()
        if not force and self._is_current(state):
            return state
        if self.read_only:
            if self.path.is_dir():
                self._open_read_only(force=force)
        else:
            with self._locked():
                self._sync_locked(force=force)
        return self._index.state()

    def _sync_locked(self, *, force: bool = False) -> None:
        """With the lock held: finish an interrupted change, tidy up, and scan the files
        when the index does not agree with them (or when `force`d)."""
        self._replay_journal()
        self._tidy()
        if force or not self._is_current(self._index.state()):
            self._scan_into(self._index, cleanup=True)

    def _scan_into(self, index: StoreIndex, *, cleanup: bool) -> None:
        directory = _directory_stamp(self.path)
        invalid_before = index.invalid()
        found = scan(self.path, self._root, index.stamps(), invalid_before, self.max_body_bytes)
        if cleanup and found.leftovers:
            for leftover in found.leftovers:  # temp files of a writer that died
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            directory = _directory_stamp(self.path)
        if not found.changes(invalid_before) and index.state().directory == directory:
            return
        with index.writing() as writer:
            for name in found.removed:
                writer.delete(name)
            writer.put(found.put)
            writer.set_invalid(found.invalid[file] for file in sorted(found.invalid))
            writer.set_directory(directory)

    def _open_read_only(self, *, force: bool = False) -> None:
        """Point a read-only store at the index on disk when it agrees with the files,
        else at a private copy (or a new index) in memory, reconciled there."""
        try:
            disk: StoreIndex | None = StoreIndex.open_read_only(self.path)
        except (FileNotFoundError, UnusableIndexError):
            disk = None
        if disk is not None:
            old, self._index = self._index, disk
            old.close()
            if not force and self._is_current(disk.state()):
                return
        memory = StoreIndex.in_memory(copy_of=disk)
        self._index = memory
        if disk is not None:
            disk.close()
        self._scan_into(memory, cleanup=False)
        if self._journal_path.exists():
            self._notes.append(
                f"{self.path}: a change was interrupted; the next writer completes it"
            )

    def _replay_journal(self) -> None:
        try:
            journal = read_journal(self._journal_path)
        except DamagedJournalError as e:
            self._notes.append(str(e))
            return
        if journal is None:
            return
        self._write_records(journal.write, journal.delete)
        self._unlink(self._journal_path)
        fsync_directory(self.path)
        self._notes.append(f"{self.path}: completed a change interrupted earlier")

    def _tidy(self) -> None:
        """Keep the `.gitignore` current and remove the index of earlier versions."""
        gitignore = self.path / GITIGNORE_FILE
        try:
            current = gitignore.read_text("utf-8")
        except FileNotFoundError:
            current = None
        except (OSError, UnicodeDecodeError):
            current = ""  # someone else's file: leave it alone
        if current is None or (current.startswith(_GITIGNORE_HEADER) and current != _GITIGNORE):
            self._write(gitignore, _GITIGNORE.encode())
        legacy = self.path / LEGACY_INDEX_FILE
        if legacy.exists():
            self._unlink(legacy)


def _directory_stamp(path: Path) -> DirectoryStamp:
    try:
        info = os.stat(path)
    except OSError as e:
        raise MemoryStoreError(f"cannot read the memory store {path}: {e.strerror}") from e
    return (info.st_ino, info.st_mtime_ns)


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
