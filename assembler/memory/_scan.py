"""Reading record files, and reconciling the index with the directory in one pass.

A scan stats every `.md` file and reads only those whose (inode, mtime_ns, size) stamp
differs from what the index holds, so a scan of an unchanged store reads no file. A file
that is not a valid record is reported (and remembered with its stamp, so it is not
read again until it changes); nothing is ever deleted because a file is bad.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from assembler.errors import MemoryStoreError
from assembler.memory._files import (
    FRONTMATTER_ALLOWANCE,
    RefusedFileError,
    is_leftover_name,
    read_record_file,
)
from assembler.memory._index_types import IndexEntry, InvalidFile, Stamp
from assembler.memory.keyword import record_terms
from assembler.memory.records import MemoryRecord, from_markdown, is_valid_name

_NOT_A_RECORD = (
    "not a memory record: file names must be <name>.md with a name of lowercase letters, "
    "digits and hyphens; ignored"
)


class IndexedRecord(NamedTuple):
    """A record as the index keeps it: its entry and its weighted term counts."""

    entry: IndexEntry
    terms: dict[str, int]


def index_record(record: MemoryRecord, stamp: Stamp) -> IndexedRecord:
    """The index row of `record`, written to a file with this stamp."""
    entry = IndexEntry(record.name, record.description, record.type, len(record.body), *stamp)
    return IndexedRecord(entry, record_terms(record.name, record.description, record.body))


def load_record(
    path: Path, root: str, name: str, max_body_bytes: int
) -> tuple[MemoryRecord, Stamp]:
    """Read and validate the record file at `path`, which must hold record `name`.

    `MemoryStoreError` (without the path: callers add it) when the file is refused or
    invalid; `OSError` (such as `FileNotFoundError`) when it cannot be read.
    """
    data, stamp = read_record_file(path, root, max_body_bytes + FRONTMATTER_ALLOWANCE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryStoreError("not UTF-8 text") from None
    return from_markdown(text, expected_name=name, max_body_bytes=max_body_bytes), stamp


class ScanResult(NamedTuple):
    """What a scan found different from the index."""

    put: list[IndexedRecord]
    """Records new or changed on disk."""
    removed: list[str]
    """Indexed records whose file is gone or no longer a valid record."""
    invalid: dict[str, InvalidFile]
    """Every `.md` file that is not a valid record, by file name."""
    leftovers: list[str]
    """Paths of temporary files, left by writers that died."""

    def changes(self, invalid_before: Mapping[str, InvalidFile]) -> bool:
        return bool(self.put or self.removed) or self.invalid != invalid_before


def scan(
    directory: Path,
    root: str,
    stored: Mapping[str, Stamp],
    stored_invalid: Mapping[str, InvalidFile],
    max_body_bytes: int,
) -> ScanResult:
    """Compare the `.md` files of `directory` with the index's stamps (see module doc)."""
    put: list[IndexedRecord] = []
    valid: set[str] = set()
    invalid: dict[str, InvalidFile] = {}
    leftovers: list[str] = []
    try:
        listing = os.scandir(directory)
    except OSError as e:
        raise MemoryStoreError(f"cannot read the memory store {directory}: {e.strerror}") from e
    with listing:
        for item in listing:
            file = item.name
            if not file.endswith(".md") or file.startswith("."):
                if is_leftover_name(file) and item.is_file(follow_symlinks=False):
                    leftovers.append(item.path)
                continue
            try:
                try:
                    info = item.stat()
                except FileNotFoundError:  # a link that leads nowhere
                    info = item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
            stem = file[:-3]
            if stored.get(stem) == stamp:
                valid.add(stem)
                continue
            known = stored_invalid.get(file)
            if known is not None and known.stamp == stamp:
                invalid[file] = known
                continue
            found = read_entry(Path(item.path), root, stem, stamp, max_body_bytes)
            if isinstance(found, IndexedRecord):
                put.append(found)
                valid.add(stem)
            elif found is not None:
                invalid[file] = found
    removed = [name for name in stored if name not in valid]
    return ScanResult(put, removed, invalid, leftovers)


def read_entry(
    path: Path, root: str, stem: str, stamp: Stamp, max_body_bytes: int
) -> IndexedRecord | InvalidFile | None:
    """The index row of one file, or why it is not a record; None if it vanished."""
    if not is_valid_name(stem):
        return InvalidFile(path.name, *stamp, _NOT_A_RECORD)
    try:
        record, read_stamp = load_record(path, root, stem, max_body_bytes)
    except FileNotFoundError:
        return None
    except RefusedFileError as e:
        return InvalidFile(path.name, *stamp, str(e))
    except MemoryStoreError as e:
        return InvalidFile(path.name, *stamp, f"{e}; skipped")
    except OSError as e:
        return InvalidFile(path.name, *stamp, f"cannot read ({e.strerror}); skipped")
    return index_record(record, read_stamp)
