"""Where a template's message points, pinned (found by mutation testing:
`python bench/mutation.py templates`, docs/testing.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.prompt.templates import shown_path


def test_a_path_is_shown_relative_to_the_current_folder_when_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "agents" / "a.yaml") == os.path.join("agents", "a.yaml")
    assert shown_path(Path("/elsewhere/a.yaml")) == "/elsewhere/a.yaml"


def test_a_path_is_shown_as_given_when_the_current_folder_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert shown_path(Path("agents/a.yaml")) == "agents/a.yaml"
