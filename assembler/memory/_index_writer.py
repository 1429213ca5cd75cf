"""Writing the store's index: one transaction's inserts, deletes and bookkeeping.

Kept apart from `assembler.memory.index` (opening and reading) because writing is where
the index's own invariants live: a record's row, its postings and its terms' document
frequencies change together, and so do the totals BM25 needs (`meta`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from assembler.memory._index_types import DirectoryStamp, IndexEntry, InvalidFile

CHUNK: Final = 500  # bound parameters per statement, below every SQLite's limit


class IndexWriter:
    """The changes of one transaction (see `StoreIndex.writing`)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._count = 0
        self._length = 0

    def put(self, records: Sequence[tuple[IndexEntry, Mapping[str, int]]]) -> None:
        """Insert or replace records' rows and postings.

        Batched: one lookup of the terms, postings inserted in key order, one update of
        each term's frequency. Building the index of a large store from its files is
        dominated by this, and key order keeps SQLite appending rather than splitting
        pages all over the postings table.
        """
        for entry, _terms in records:
            self.delete(entry.name)
        ids = self._term_ids(sorted({term for _entry, terms in records for term in terms}))
        (last,) = self._db.execute("SELECT IFNULL(MAX(id), 0) FROM records").fetchone()
        rows: list[tuple[object, ...]] = []
        postings: list[tuple[int, int, int, int]] = []
        frequencies: Counter[int] = Counter()
        for record_id, (entry, terms) in enumerate(records, start=last + 1):
            length = sum(terms.values())
            term_ids = [ids[term] for term in terms]
            rows.append((record_id, *entry, length, pack_ids(term_ids)))
            postings.extend(
                (term_id, record_id, count, length)
                for term_id, count in zip(term_ids, terms.values(), strict=True)
            )
            frequencies.update(term_ids)
            self._count += 1
            self._length += length
        postings.sort()
        self._db.executemany(
            "INSERT INTO records (id, name, description, type, chars, inode, mtime_ns, size, "
            "length, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        self._db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?)", postings)
        self._db.executemany(
            "UPDATE terms SET df = df + ? WHERE id = ?",
            [(count, term_id) for term_id, count in sorted(frequencies.items())],
        )

    def delete(self, name: str) -> bool:
        """Remove a record's row and postings; False when there was none."""
        row = self._db.execute(
            "SELECT id, length, terms FROM records WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            return False
        record, length, packed = row
        term_ids = unpack_ids(packed)
        for chunk in chunks(term_ids):
            marks = ",".join("?" * len(chunk))
            self._db.execute(
                f"DELETE FROM postings WHERE term IN ({marks}) AND record = ?", (*chunk, record)
            )
            self._db.execute(f"UPDATE terms SET df = df - 1 WHERE id IN ({marks})", chunk)
        self._db.execute("DELETE FROM records WHERE id = ?", (record,))
        self._count -= 1
        self._length -= length
        return True

    def set_invalid(self, invalid: Iterable[InvalidFile]) -> None:
        """Replace the list of invalid files."""
        self._db.execute("DELETE FROM invalid")
        self._db.executemany("INSERT INTO invalid VALUES (?, ?, ?, ?, ?)", invalid)

    def set_directory(self, stamp: DirectoryStamp | None) -> None:
        """Record the store directory's stamp as of this change (None: unknown, so the
        next open scans the files)."""
        inode, mtime = stamp if stamp is not None else (-1, -1)
        self._db.executemany(
            "UPDATE meta SET value = ? WHERE key = ?",
            [(inode, "dir_inode"), (mtime, "dir_mtime_ns")],
        )

    def flush(self) -> None:
        self._db.executemany(
            "UPDATE meta SET value = value + ? WHERE key = ?",
            [(self._count, "count"), (self._length, "total_length"), (1, "changes")],
        )

    def _term_ids(self, terms: list[str]) -> dict[str, int]:
        """The ids of `terms`, adding the new ones."""
        ids: dict[str, int] = {}
        if len(terms) > CHUNK * 20:  # a bulk build: one pass over the table is cheaper
            wanted = set(terms)
            ids.update(
                row for row in self._db.execute("SELECT term, id FROM terms") if row[0] in wanted
            )
        else:
            for chunk in chunks(terms):
                marks = ",".join("?" * len(chunk))
                ids.update(
                    self._db.execute(f"SELECT term, id FROM terms WHERE term IN ({marks})", chunk)
                )
        new = [term for term in terms if term not in ids]
        if new:
            (last,) = self._db.execute("SELECT IFNULL(MAX(id), 0) FROM terms").fetchone()
            numbered = list(enumerate(new, start=last + 1))
            self._db.executemany("INSERT INTO terms (id, term, df) VALUES (?, ?, 0)", numbered)
            ids.update((term, term_id) for term_id, term in numbered)
        return ids


def pack_ids(ids: Iterable[int]) -> bytes:
    """Term ids, sorted, as varint-encoded gaps: the record's list of terms (needed to
    delete its postings) in about two bytes a term instead of six as text."""
    out = bytearray()
    previous = 0
    for value in sorted(ids):
        gap = value - previous
        previous = value
        while gap >= 0x80:
            out.append(gap & 0x7F | 0x80)
            gap >>= 7
        out.append(gap)
    return bytes(out)


def unpack_ids(packed: bytes) -> list[int]:
    ids: list[int] = []
    value = shift = previous = 0
    for byte in packed:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        previous += value
        ids.append(previous)
        value = shift = 0
    return ids


T = TypeVar("T")


def chunks(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]
