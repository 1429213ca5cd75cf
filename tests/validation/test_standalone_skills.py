"""`assemble validate` checks a skill folder or a single `SKILL.md` on its own (issue
12): it said "no agent manifests found" for `skills/`, and read a `SKILL.md` named on
the command line as a manifest."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble

GOOD = "---\nname: good\ndescription: Does good things.\n---\nBody.\n"
BAD = "---\nname: Bad\n---\nBody.\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, text in (("good", GOOD), ("Bad", BAD)):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(text, "utf-8")
    return tmp_path


def test_a_single_skill_md(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "validate", "skills/good/SKILL.md")
    assert (outcome.code, outcome.out) == (0, "1 skill valid\n")


def test_a_single_broken_skill_md_reports_its_problems(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = assemble(capsys, "validate", "skills/Bad/SKILL.md")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [
        "skills/Bad/SKILL.md:2:1: error: missing required field `description`",
        "skills/Bad/SKILL.md:2:7: error: name 'Bad' must be lowercase [name]",
        "2 error(s), 0 warning(s) in 1 skill",
    ]


def test_a_skill_folder(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert assemble(capsys, "validate", "skills/good").out == "1 skill valid\n"


def test_a_directory_of_skills(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "validate", "skills")
    assert outcome.code == 1
    assert outcome.out.splitlines()[-1] == "2 error(s), 0 warning(s) in 2 skills"
    assert "no agent manifests found" not in outcome.out


def test_skills_and_manifests_in_one_run(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (here / "agent.yaml").write_text("version: 1\nname: a\nidentity: x\n", "utf-8")
    outcome = assemble(capsys, "validate", "agent.yaml", "skills/good/SKILL.md", "--format", "json")
    assert outcome.code == 0
    assert '"files": 1,\n  "manifests": 1,\n  "eval_files": 0,\n  "skills": 1,' in outcome.out


def test_a_directory_with_neither_is_still_an_error(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "empty").mkdir()
    outcome = assemble(capsys, "validate", "empty")
    assert outcome.code == 1
    assert "empty: error: no agent manifests found in this directory" in outcome.out
