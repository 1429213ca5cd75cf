"""Fixtures of the session-test tests: a committed project (`regress_project`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from regress_project import make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")
