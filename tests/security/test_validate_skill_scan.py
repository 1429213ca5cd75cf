"""A skills directory that is the whole disk (`skills: [/]`, `~`) cannot make
`validate` walk it all: the scan stops after `MAX_SCANNED_FOLDERS` folders with an
error saying where to point `skills` (found by the manifest fuzz: `skills: [/]` took
13 s and reported 4,947 issues of other programs' skills)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assembler.resources import skills
from assembler.resources.skills import discover_skills


def test_the_scan_stops_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(skills, "MAX_SCANNED_FOLDERS", 20)
    for index in range(40):
        (tmp_path / "big" / f"d{index:02}" / "deeper").mkdir(parents=True)
    found, issues = discover_skills([tmp_path / "big"])
    assert found == ()
    (issue,) = issues
    assert issue.severity == "error"
    assert "holds more than 20 folders; the scan stopped there" in issue.message


def test_skills_within_the_limit_are_all_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(skills, "MAX_SCANNED_FOLDERS", 20)
    for name in ("alpha", "beta"):
        (tmp_path / "s" / name).mkdir(parents=True)
        (tmp_path / "s" / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: d\n---\n", "utf-8"
        )
    found, issues = discover_skills([tmp_path / "s"])
    assert [skill.name for skill in found] == ["alpha", "beta"] and issues == ()
