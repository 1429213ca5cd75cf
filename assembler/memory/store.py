"""The memory store: one Markdown file per record, a derived JSON index, a lock.

On disk (default `<workspace>/.assembler/memory/`):

    <name>.md       one record: YAML frontmatter (name, description, type), then the body
    index.json      derived cache: per record its description, type, body length, the
                    file's (inode, mtime_ns, size) and its keyword term counts
                    (layout in `assembler.memory.index`)
    .lock           `flock`ed around every read-modify-write
    .journal.json   only while a multi-record change is being applied (see `apply`)
    .gitignore      keeps the three files above out of git

The record files are the truth and the only thing meant for review in git: each
change is a small, readable diff, and two branches that each add a memory never
conflict. A committed index would conflict on every such pair of branches, so the
index is a cache, rebuilt from the files whenever it is missing, unreadable, from
another version, or stale. Staleness is checked file by file on open: an entry is
trusted only while its file's (inode, mtime_ns, size) is unchanged, so opening a
10,000-record store costs one `json.load` and one directory scan, and reads only the
files that changed. A corrupt record file is reported in `diagnostics` and skipped;
nothing is ever deleted because another file is bad.

Concurrency: every write holds an exclusive `flock` on `.lock` and starts by reloading
what other processes wrote, so two processes adding records at once lose nothing.
Readers need no lock: every file is replaced by an atomic rename.

Multi-record changes (consolidation, batch upserts) are all-or-nothing through a redo
journal. The new record texts and the names to delete are written to `.journal.json`
(temp file, fsync, rename): that rename is the commit point. Then the record files are
written, the deleted ones unlinked, the index rewritten and the journal removed.
Whoever next takes the lock and finds a journal replays it (replaying is idempotent).
A crash before the rename leaves the old store untouched (plus temp files the next
writer deletes); a crash after it leaves a store that the next open completes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from assembler.errors import MemoryStoreError
from assembler.files import fsync_directory
from assembler.memory._files import TEMP_PREFIX, atomic_write, exclusive_lock
from assembler.memory.index import (
    INDEX_FILE,
    IndexEntry,
    InvalidFile,
    Stamp,
    decode_index,
    encode_index,
    entry_for,
)
from assembler.memory.records import (
    DEFAULT_MAX_BODY_BYTES,
    MemoryRecord,
    from_markdown,
    is_valid_name,
    to_markdown,
)

if TYPE_CHECKING:
    from assembler.manifest.model import MemoryPolicy

LOCK_FILE: Final = ".lock"
JOURNAL_FILE: Final = ".journal.json"
GITIGNORE_FILE: Final = ".gitignore"
JOURNAL_FORMAT: Final = "assembler-memory-journal"
_GITIGNORE: Final = (
    "# Written by agent-assembler. The record files (*.md) are the memory;\n"
    "# index.json is rebuilt from them, the others exist only while writing.\n"
    "index.json\n.lock\n.journal.json*\n.tmp-*\n"
)


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
        self._entries: dict[str, IndexEntry] = {}
        self._invalid: dict[str, InvalidFile] = {}
        self._notes: list[str] = []
        self._index_stamp: Stamp | None = None
        self._catalog: tuple[IndexEntry, ...] | None = None
        self.generation = 0
        """Counts in-memory changes, so derived views (the keyword index) know to update."""

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
        """Open (creating if needed) the store at `path`, bringing its index up to date.

        `read_only` opens without writing anything, not even the index or a lock file
        (`assemble render --dry-run`): a missing store is empty, a stale index is
        reconciled in memory only, and every write raises `MemoryStoreError`.
        """
        limit = max_body_bytes or (policy.record_max_bytes if policy else DEFAULT_MAX_BODY_BYTES)
        store = cls(Path(path), max_body_bytes=limit, read_only=read_only)
        if read_only:
            if store.path.is_dir():
                store._sync_locked()
            return store
        try:
            store.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise MemoryStoreError(f"cannot create the memory store {path}: {e.strerror}") from e
        store.rescan()
        return store

    def rescan(self) -> None:
        """Re-read the directory under the lock: finish an interrupted change, pick up
        files edited by hand, and rewrite the index if anything differed."""
        if self.read_only:
            if self.path.is_dir():
                self._sync_locked()
            return
        with self._locked():
            self._sync_locked()

    def refresh(self) -> bool:
        """Cheaply pick up what other processes wrote: one `stat` of the index, and a
        reload only when it changed. Returns True when the entries were reloaded.

        Hand edits that did not go through a store are seen by `rescan` (or the next
        open), not here: scanning ten thousand files every turn would cost more than
        the whole selection.
        """
        try:
            stat = os.stat(self._index_path)
            current: Stamp | None = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            current = None
        if current == self._index_stamp:
            return False
        loaded = self._read_index()
        if loaded is None:
            self.rescan()
        else:
            self._set_entries(*loaded)
        return True

    # -- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self.catalog())

    @property
    def entries(self) -> Mapping[str, IndexEntry]:
        """Every valid record's index entry, by name (read-only)."""
        return MappingProxyType(self._entries)

    def catalog(self) -> tuple[IndexEntry, ...]:
        """All entries sorted by name: the store's stable order."""
        if self._catalog is None:
            self._catalog = tuple(self._entries[name] for name in sorted(self._entries))
        return self._catalog

    def names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.catalog())

    @property
    def diagnostics(self) -> tuple[str, ...]:
        """Problems found in the store: corrupt or misnamed files (skipped), a rebuilt
        index. Reported, never fatal."""
        problems = (
            f"{self.path / name}: {bad.message}" for name, bad in sorted(self._invalid.items())
        )
        return (*self._notes, *problems)

    def get(self, name: str) -> MemoryRecord | None:
        """Read and validate one record; None if the store has no such record.

        `MemoryStoreError` when its file was removed or damaged since the index was
        read (the caller decides whether that is fatal; selection reports and skips).
        """
        if name not in self._entries:
            return None
        path = self._record_path(name)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise MemoryStoreError(f"{path}: cannot read: {e.strerror}") from e
        try:
            return from_markdown(
                data.decode("utf-8"), expected_name=name, max_body_bytes=self.max_body_bytes
            )
        except UnicodeDecodeError as e:
            raise MemoryStoreError(f"{path}: not UTF-8 text") from e
        except MemoryStoreError as e:
            raise MemoryStoreError(f"{path}: {e}") from e

    # -- writing ---------------------------------------------------------------------

    def upsert(self, record: MemoryRecord) -> bool:
        """Create or replace the record with this name; True when it was created."""
        with self._locked():
            self._sync_locked()
            created = record.name not in self._entries
            self._commit({record.name: record}, ())
        return created

    def add(self, record: MemoryRecord) -> None:
        """Create a record; `MemoryStoreError` if one with this name exists."""
        with self._locked():
            self._sync_locked()
            if record.name in self._entries:
                raise MemoryStoreError(f"memory record {record.name!r} already exists")
            self._commit({record.name: record}, ())

    def upsert_many(self, records: Iterable[MemoryRecord]) -> None:
        """Create or replace several records, all or none (one lock, one index write)."""
        self.apply(records, ())

    def remove(self, name: str) -> bool:
        """Delete a record; False when there was none."""
        with self._locked():
            self._sync_locked()
            if name not in self._entries:
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
        """Write and delete records in one all-or-nothing change (see the module doc).

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
            changed = [
                name
                for name, stamp in (expect or {}).items()
                if (self._entries[name].stamp if name in self._entries else None) != stamp
            ]
            if changed:
                raise MemoryStoreError(
                    f"memory record(s) changed by someone else meanwhile: {', '.join(changed)}; "
                    "nothing was changed"
                )
            unknown = [name for name in removed if name not in self._entries]
            if unknown:
                raise MemoryStoreError(f"no memory record named {', '.join(unknown)}")
            self._commit(records, removed)

    def _commit(self, records: Mapping[str, MemoryRecord], deletes: Sequence[str]) -> None:
        """With the lock held and the view freshly synced: journal, apply, reindex."""
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
            journal = {"format": JOURNAL_FORMAT, "write": texts, "delete": list(deletes)}
            self._write(self._journal_path, json.dumps(journal, ensure_ascii=False).encode())
        try:
            stamps = self._write_records(texts, deletes)
        except MemoryStoreError as e:
            if not journaled:
                raise
            raise InterruptedChangeError(
                f"{e}; the change is committed and will be completed when the store is next opened"
            ) from e
        for name, record in records.items():
            self._entries[name] = entry_for(record, stamps[name])
        for name in deletes:
            self._entries.pop(name, None)
        self._changed()
        self._write_index()
        if journaled:
            self._unlink(self._journal_path)
            fsync_directory(self.path)

    def _write_records(self, texts: Mapping[str, str], deletes: Iterable[str]) -> dict[str, Stamp]:
        stamps: dict[str, Stamp] = {}
        for name, text in texts.items():
            path = self._record_path(name)
            self._write(path, text.encode("utf-8"), sync_directory=False)
            stat = os.stat(path)
            stamps[name] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            self._invalid.pop(path.name, None)
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

    # -- the lock, the journal, the index ------------------------------------------

    @property
    def _index_path(self) -> Path:
        return self.path / INDEX_FILE

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

    def _sync_locked(self) -> None:
        """With the lock held: replay a journal, reconcile index and files, and delete
        temp files (one directory scan does all three)."""
        self._notes = []
        if not self.read_only:
            self._replay_journal()
            gitignore = self.path / GITIGNORE_FILE
            if not gitignore.exists():
                self._write(gitignore, _GITIGNORE.encode())
        loaded = self._current_index()
        stored, stored_invalid = loaded if loaded is not None else ({}, {})
        entries: dict[str, IndexEntry] = {}
        invalid: dict[str, InvalidFile] = {}
        changed = loaded is None
        try:
            scan = os.scandir(self.path)
        except OSError as e:
            raise MemoryStoreError(f"cannot read the memory store {self.path}: {e.strerror}") from e
        with scan:
            for item in scan:
                if not item.name.endswith(".md") or item.name.startswith("."):
                    if item.name.startswith(TEMP_PREFIX) and not self.read_only:  # a dead writer's
                        with contextlib.suppress(OSError):
                            os.unlink(item.path)
                    continue
                try:
                    stat = item.stat()
                except FileNotFoundError:
                    continue
                stem = item.name[:-3]
                known = stored.get(stem)
                if (
                    known is not None
                    and known.mtime_ns == stat.st_mtime_ns
                    and known.inode == stat.st_ino
                    and known.size == stat.st_size
                ):
                    entries[stem] = known
                    continue
                stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
                bad = stored_invalid.get(item.name)
                if bad is not None and bad.stamp == stamp:
                    invalid[item.name] = bad
                    continue
                changed = True
                result = self._read_record_file(Path(item.path), stem)
                if isinstance(result, IndexEntry):
                    entries[stem] = result
                elif result is not None:
                    invalid[item.name] = result
        if entries.keys() != stored.keys() or invalid.keys() != stored_invalid.keys():
            changed = True
        self._set_entries(entries, invalid)
        if changed and not self.read_only:
            self._write_index()

    def _read_record_file(self, path: Path, stem: str) -> IndexEntry | InvalidFile | None:
        try:
            with open(path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            return InvalidFile(path.name, 0, 0, 0, f"cannot read ({e.strerror}); skipped")
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if not is_valid_name(stem):
            message = (
                "not a memory record: file names must be <name>.md with a name of "
                "lowercase letters, digits and hyphens; ignored"
            )
            return InvalidFile(path.name, *stamp, message)
        try:
            record = from_markdown(
                data.decode("utf-8"), expected_name=stem, max_body_bytes=self.max_body_bytes
            )
        except UnicodeDecodeError:
            return InvalidFile(path.name, *stamp, "not UTF-8 text; skipped")
        except MemoryStoreError as e:
            return InvalidFile(path.name, *stamp, f"{e}; skipped")
        return entry_for(record, stamp)

    def _replay_journal(self) -> None:
        try:
            raw = self._journal_path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as e:
            raise MemoryStoreError(f"cannot read {self._journal_path}: {e.strerror}") from e
        try:
            journal = json.loads(raw)
            writes = journal["write"]
            deletes = journal["delete"]
            if journal.get("format") != JOURNAL_FORMAT or not (
                isinstance(writes, dict)
                and all(is_valid_name(k) and isinstance(v, str) for k, v in writes.items())
                and isinstance(deletes, list)
                and all(is_valid_name(name) for name in deletes)
            ):
                raise ValueError("unexpected layout")
        except (ValueError, KeyError, TypeError, AttributeError):
            # A journal is written by rename, so a damaged one was damaged by something
            # else. Keep it for a person to inspect, and leave the records alone.
            damaged = self._journal_path.with_name(JOURNAL_FILE + ".damaged")
            with contextlib.suppress(OSError):
                os.replace(self._journal_path, damaged)
            self._notes.append(f"{damaged}: an unreadable change journal was set aside")
            return
        self._write_records(writes, deletes)
        self._unlink(self._journal_path)
        fsync_directory(self.path)
        self._notes.append(f"{self.path}: completed a change interrupted earlier")

    def _current_index(self) -> tuple[dict[str, IndexEntry], dict[str, InvalidFile]] | None:
        """The index as on disk, without parsing it again when it is the one this
        object last read or wrote (the common case for a writer in a session)."""
        try:
            stat = os.stat(self._index_path)
        except FileNotFoundError:
            self._index_stamp = None
            return None
        if self._index_stamp == (stat.st_ino, stat.st_mtime_ns, stat.st_size):
            return dict(self._entries), dict(self._invalid)
        return self._read_index()

    def _read_index(self) -> tuple[dict[str, IndexEntry], dict[str, InvalidFile]] | None:
        """The index as stored, or None when it is missing, unreadable or outdated."""
        try:
            with open(self._index_path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                raw = handle.read()
        except FileNotFoundError:
            self._index_stamp = None
            return None
        except OSError as e:
            if e.errno == errno.EACCES:
                raise MemoryStoreError(f"cannot read {self._index_path}: {e.strerror}") from e
            return None
        self._index_stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        try:
            return decode_index(raw)
        except ValueError:
            self._notes.append(f"{self._index_path}: unreadable; rebuilt from the record files")
            return None

    def _write_index(self) -> None:
        self._index_stamp = None  # if the write fails, the next sync re-reads the disk
        invalid = [self._invalid[key] for key in sorted(self._invalid)]
        self._write(self._index_path, encode_index(self.catalog(), invalid))
        stat = os.stat(self._index_path)
        self._index_stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def _set_entries(self, entries: dict[str, IndexEntry], invalid: dict[str, InvalidFile]) -> None:
        self._entries = entries
        self._invalid = invalid
        self._changed()

    def _changed(self) -> None:
        self._catalog = None
        self.generation += 1
