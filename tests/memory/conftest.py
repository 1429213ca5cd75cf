"""Fixtures for the memory tests: a policy and a store in a temporary directory."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemoryRecord, MemoryStore, make_record
from assembler.memory.index import INDEX_DIR, index_path

PolicyFactory = Callable[..., MemoryPolicy]
RecordFactory = Callable[..., MemoryRecord]


@pytest.fixture
def make_policy(tmp_path: Path) -> PolicyFactory:
    def factory(**changes: Any) -> MemoryPolicy:
        return MemoryPolicy(store=tmp_path / "memory", **changes)

    return factory


@pytest.fixture
def policy(make_policy: PolicyFactory) -> MemoryPolicy:
    return make_policy()


@pytest.fixture
def store(policy: MemoryPolicy) -> MemoryStore:
    return MemoryStore.open(policy.store, policy)


@pytest.fixture
def rec() -> RecordFactory:
    """`rec("name", "body", description=..., type=...)`: a valid record in one line."""

    def factory(
        name: str, body: str = "", *, description: str = "", type: str = "project"
    ) -> MemoryRecord:
        return make_record(
            name, description or f"about {name.replace('-', ' ')}", type, body or f"{name} body"
        )

    return factory


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


@pytest.fixture
def snapshot() -> Callable[[Path], dict[str, object]]:
    """Every file of a store except the (empty) lock file, byte for byte, and what its
    index holds (`index_dump`)."""

    def take(directory: Path) -> dict[str, object]:
        files: dict[str, object] = {
            p.name: p.read_bytes()
            for p in sorted(directory.iterdir())
            if p.name not in (".lock", INDEX_DIR)
        }
        files[INDEX_DIR] = index_dump(directory)
        return files

    return take
