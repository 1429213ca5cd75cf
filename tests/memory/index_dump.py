"""Reading a memory store's index straight from its SQLite file, for assertions that
must not trust the store's own reading of it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from assembler.memory.index import index_path


def index_dump(store_dir: Path) -> dict[str, Any]:
    """What the index holds, read straight from its SQLite file (not through the
    store): every record row with its file stamp and term counts, the invalid files,
    and the totals. Row ids, the change counter and the directory stamp are left out:
    they differ between an index built step by step and one rebuilt from the files."""
    uri = f"{index_path(store_dir).resolve().as_uri()}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        terms = dict(db.execute("SELECT id, term FROM terms"))
        postings: dict[int, dict[str, int]] = {}
        for term, record, count, _length in db.execute("SELECT * FROM postings"):
            postings.setdefault(record, {})[terms[term]] = count
        records = {
            row[1]: (*row[2:9], postings.get(row[0], {}))
            for row in db.execute("SELECT * FROM records ORDER BY name")
        }
        invalid = db.execute("SELECT * FROM invalid ORDER BY file").fetchall()
        frequencies = dict(db.execute("SELECT term, df FROM terms WHERE df > 0"))
        meta = dict(db.execute("SELECT key, value FROM meta"))
    db.close()
    return {
        "records": records,
        "invalid": invalid,
        "df": frequencies,
        "count": meta["count"],
        "total_length": meta["total_length"],
    }
