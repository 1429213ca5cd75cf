"""Fixtures for the memory tests: a policy and a store in a temporary directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from index_dump import index_dump

from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemoryRecord, MemoryStore, make_record
from assembler.memory.index import INDEX_DIR

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
