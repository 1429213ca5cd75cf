"""The store's index file (`index.json`): what is known of every record without
reading it.

The index is a cache derived from the record files, never the truth: it is rebuilt
when missing, unreadable or from another `INDEX_VERSION`, and each entry is trusted
only while its file's (inode, mtime_ns, size) stamp is unchanged. Its job is to make
opening a large store cheap: one `json.load` and one directory scan instead of reading
and parsing every file.

Layout, one row per line so a person (or a diff) can still read it:

    {"format": "assembler-memory-index", "version": 1,
    "records": [
    [name, description, type, body_chars, inode, mtime_ns, size, "term:count ..."],
    ...],
    "invalid": [
    [file, inode, mtime_ns, size, "why it was skipped"],
    ...]}

Rows are arrays rather than objects because ten thousand small arrays load several
times faster than ten thousand small dicts. Invalid files are kept too, so a corrupt
record is reported on every open without being re-read, and without the index being
rewritten each time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final, NamedTuple

from assembler.memory.keyword import record_terms
from assembler.memory.records import MemoryRecord

INDEX_FILE: Final = "index.json"
INDEX_FORMAT: Final = "assembler-memory-index"
# Bump when the layout or `record_terms` changes: an index from another version is
# rebuilt from the files rather than misread.
INDEX_VERSION: Final = 1

Stamp = tuple[int, int, int]
"""(inode, mtime_ns, size) of a file: changes whenever the file is replaced or edited."""


class IndexEntry(NamedTuple):
    """What the index knows of a record without reading its file.

    A NamedTuple, not a dataclass: ten thousand of them are built on every open, and a
    tuple is several times cheaper to create than a frozen dataclass.
    """

    name: str
    description: str
    type: str
    chars: int
    inode: int
    mtime_ns: int
    size: int
    terms: str

    @property
    def stamp(self) -> Stamp:
        """The stamp of the file this entry was read from."""
        return (self.inode, self.mtime_ns, self.size)


class InvalidFile(NamedTuple):
    """A `.md` file that is not a valid record. `message` leaves out the directory,
    which may be moved; the store adds it when reporting."""

    file: str
    inode: int
    mtime_ns: int
    size: int
    message: str

    @property
    def stamp(self) -> Stamp:
        return (self.inode, self.mtime_ns, self.size)


def entry_for(record: MemoryRecord, stamp: Stamp) -> IndexEntry:
    """The index entry of `record`, written to a file with this stamp."""
    return IndexEntry(
        record.name,
        record.description,
        record.type,
        len(record.body),
        *stamp,
        record_terms(record.name, record.description, record.body),
    )


def encode_index(entries: Iterable[IndexEntry], invalid: Iterable[InvalidFile]) -> bytes:
    """The index file's bytes, rows in the order given (the store passes name order)."""
    records = [json.dumps(list(entry), ensure_ascii=False) for entry in entries]
    bad = [json.dumps(list(item), ensure_ascii=False) for item in invalid]
    text = (
        f'{{"format": "{INDEX_FORMAT}", "version": {INDEX_VERSION},\n'
        f'"records": {_rows(records)},\n"invalid": {_rows(bad)}}}\n'
    )
    return text.encode("utf-8")


def decode_index(
    raw: bytes,
) -> tuple[dict[str, IndexEntry], dict[str, InvalidFile]] | None:
    """Entries and invalid files by name; None for an index of another format or
    version (to be rebuilt quietly); `ValueError` when it is damaged."""
    try:
        data: Any = json.loads(raw)
        if data.get("format") != INDEX_FORMAT or data.get("version") != INDEX_VERSION:
            return None
        entries = {row[0]: IndexEntry(*row) for row in data["records"]}
        invalid = {row[0]: InvalidFile(*row) for row in data["invalid"]}
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"damaged index: {e}") from e
    return entries, invalid


def _rows(rows: list[str]) -> str:
    return "[\n" + ",\n".join(rows) + "\n]" if rows else "[]"
