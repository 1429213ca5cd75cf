"""The escape corpus's fixture: a fresh `Place` (see `escapes`) per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from escapes import Place


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    made = Place(tmp_path)
    made.home.mkdir()
    made.reset()
    yield made
    made.close()
