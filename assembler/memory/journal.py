"""The redo journal that makes a multi-record change all-or-nothing.

A change to several records (consolidation, a batch of upserts) first writes the new
record texts and the names to delete to `.journal.json` (temp file, fsync, rename):
that rename is the commit point. Then the record files are written, the deleted ones
unlinked, the index updated and the journal removed. Whoever next takes the store's
lock and finds a journal replays it; replaying is idempotent (it writes the same texts
and deletes the same names again). A crash before the rename leaves the old store
untouched (plus temp files the next writer deletes); a crash after it leaves a store
that the next writer completes.

A journal is only ever written whole, by rename, so one that cannot be read was damaged
by something else: it is set aside for a person to inspect, and the records are left
alone.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from assembler.errors import MemoryStoreError
from assembler.memory.records import is_valid_name

JOURNAL_FILE: Final = ".journal.json"
JOURNAL_FORMAT: Final = "assembler-memory-journal"
DAMAGED_SUFFIX: Final = ".damaged"


class Journal(NamedTuple):
    """A committed change: record texts to write, by name, and names to delete."""

    write: dict[str, str]
    delete: list[str]


def encode_journal(texts: Mapping[str, str], deletes: Sequence[str]) -> bytes:
    data = {"format": JOURNAL_FORMAT, "write": dict(texts), "delete": list(deletes)}
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def read_journal(path: Path) -> Journal | None:
    """The journal at `path`; None when there is none. A damaged journal is renamed
    aside (`<file>.damaged`) and reported by `DamagedJournalError`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise MemoryStoreError(f"cannot read {path}: {e.strerror}") from e
    try:
        data: Any = json.loads(raw)
        writes, deletes = data["write"], data["delete"]
        if data.get("format") != JOURNAL_FORMAT or not (
            isinstance(writes, dict)
            and all(is_valid_name(k) and isinstance(v, str) for k, v in writes.items())
            and isinstance(deletes, list)
            and all(is_valid_name(name) for name in deletes)
        ):
            raise ValueError("unexpected layout")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        damaged = path.with_name(path.name + DAMAGED_SUFFIX)
        with contextlib.suppress(OSError):
            os.replace(path, damaged)
        raise DamagedJournalError(f"{damaged}: an unreadable change journal was set aside") from e
    return Journal(writes, deletes)


class DamagedJournalError(MemoryStoreError):
    """A journal that could not be read; its message is the diagnostic to report."""
