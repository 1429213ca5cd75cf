"""The `project` fixture: a small project to evaluate (see `eval_project`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_project import Project, make_project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "project")
