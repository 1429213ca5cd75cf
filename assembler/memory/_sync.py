"""Keeping a store's index in step with its record files (the base of `MemoryStore`).

Telling whether the index disagrees with the files must not cost a look at every file:
a stat is a few microseconds, so a hundred thousand records would take most of a second
before the first selection. The index therefore records the store directory's (inode,
mtime_ns) as of its last agreement with the files, and every open and every turn
compares it with the directory (one stat). Adding, deleting or renaming a file changes
it, and so does saving a file by replacing it (git, and most editors and tools); a
difference starts a scan that stats every file and reads only those whose stamp
changed. Files found invalid are stated again on every open, so a fix by hand is seen
at once. An edit that rewrites a record in place without touching the directory is
seen when that record is read (its body always comes from the file, and the index
entry is corrected then) and by the next scan; `MemoryStore.rescan()` forces one.

Every change holds an exclusive `flock` on `.lock`, finishes an interrupted change
(the journal), checks the directory, writes the files, then updates the index and its
directory stamp in one transaction. A change made by hand in the instant between a
store's own write and its stamp being taken is the one thing this can miss, until the
next scan.

A read-only store never writes in the store: it uses the index on disk when that
agrees with the files; otherwise it reconciles a private copy in memory, and when there
is no usable index (a fresh clone: the index is not committed) it uses the one kept for
it in the user's cache (`_kept`), built there from the files the first time and
reconciled like the store's own afterwards when the store may keep one (`assemble
memory list`; never a dry run, which writes nothing anywhere and then indexes in
memory). A read-only store reads nothing until it is asked something
(`MemoryStore.open`). A pending journal is left for the next writer.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Final

from assembler.errors import MemoryStoreError
from assembler.files import fsync_directory
from assembler.memory._files import atomic_write, exclusive_lock, file_stamp
from assembler.memory._index_types import DirectoryStamp, Stamp
from assembler.memory._kept import kept_index_home
from assembler.memory._scan import scan
from assembler.memory.index import IndexState, StoreIndex, UnusableIndexError
from assembler.memory.journal import JOURNAL_FILE, DamagedJournalError, read_journal

LOCK_FILE: Final = ".lock"
GITIGNORE_FILE: Final = ".gitignore"
LEGACY_INDEX_FILE: Final = "index.json"
_LEGACY_INDEX_START: Final = b'{"format": "assembler-memory-index"'
"""How every index an earlier version wrote begins (`encode_index` wrote this first)."""
_GITIGNORE_HEADER: Final = "# Written by agent-assembler."
_GITIGNORE: Final = (
    f"{_GITIGNORE_HEADER} The record files (*.md) are the memory;\n"
    "# .index/ is rebuilt from them, the others exist only while writing.\n"
    ".index/\n.lock\n.journal.json*\n.tmp-*\nindex.json\n"
)


class IndexKeeper:
    """The file side of a store: writes, the lock, the journal, and the checks and
    scans that keep the index true to the files."""

    path: Path
    read_only: bool
    keep_index: bool
    max_body_bytes: int
    _root: str
    _index: StoreIndex
    _notes: list[str]

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

    def _is_current(self, state: IndexState, index: StoreIndex | None = None) -> bool:
        """Whether the index (this store's, or `index`) agrees with the directory,
        judged without a scan: the directory's stamp, no pending journal, no invalid
        file changed."""
        if state.directory is None or directory_stamp(self.path) != state.directory:
            return False
        if self._journal_path.exists():
            return False
        for file, bad in (index or self._index).invalid().items():
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
        directory = directory_stamp(self.path)
        invalid_before = index.invalid()
        found = scan(self.path, self._root, index.stamps(), invalid_before, self.max_body_bytes)
        if cleanup and found.leftovers:
            for leftover in found.leftovers:  # temp files of a writer that died
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            directory = directory_stamp(self.path)
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
        else at a private copy in memory, reconciled there. With no usable index in the
        store, the one kept for it in the user's cache (`_kept`) stands in for it: built
        or brought up to date there when the store `keep_index`es, else used as it is
        (a dry run writes nothing, anywhere)."""
        disk = _existing_index(self.path)
        if disk is None and self.keep_index:
            kept = self._kept_index(force=force)
            if kept is not None:
                old, self._index = self._index, kept
                old.close()
                self._note_interrupted_change()
                return
        if disk is None:
            disk = _existing_index(kept_index_home(self._root))
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
        self._note_interrupted_change()

    def _note_interrupted_change(self) -> None:
        if self._journal_path.exists():
            self._notes.append(
                f"{self.path}: a change was interrupted; the next writer completes it"
            )

    def _kept_index(self, *, force: bool) -> StoreIndex | None:
        """The index kept for this store in the user's cache, brought up to date with
        the files (built from them the first time); None, with a note, when the cache
        cannot be used (the index is then built in memory, as before)."""
        home = kept_index_home(self._root)
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            with exclusive_lock(home / LOCK_FILE):  # one builder at a time
                index, _ = StoreIndex.open(home)
                try:
                    if force or not self._is_current(index.state(), index):
                        self._scan_into(index, cleanup=False)
                except BaseException:
                    index.close()
                    raise
        except (OSError, MemoryStoreError, UnusableIndexError) as e:
            self._notes.append(
                f"{self.path}: no index could be kept in {home} ({e}); indexed in memory"
            )
            return None
        return index

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
        if is_legacy_index(legacy):
            self._unlink(legacy)


def _existing_index(store: Path) -> StoreIndex | None:
    """The index under `store`, opened read-only as it is; None when there is none or
    it cannot be used."""
    try:
        return StoreIndex.open_existing(store)
    except (FileNotFoundError, UnusableIndexError):
        return None


def is_legacy_index(path: Path) -> bool:
    """Whether `path` is the index an earlier version wrote: a regular file (not a link)
    whose first bytes name its format. A store may share its directory with the user's
    files, and a user's own `index.json` is theirs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # missing, a link, unreadable: not ours to delete
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        start = os.read(fd, len(_LEGACY_INDEX_START))
    except OSError:
        return False
    finally:
        os.close(fd)
    return start == _LEGACY_INDEX_START


def directory_stamp(path: Path) -> DirectoryStamp:
    try:
        info = os.stat(path)
    except OSError as e:
        raise MemoryStoreError(f"cannot read the memory store {path}: {e.strerror}") from e
    return (info.st_ino, info.st_mtime_ns)
