"""A skill without a description stops `validate` (an error, for CI) but not `render`
or `run`, which leave that skill out with a warning, as the resource loader does
(issue 12). Before, both refused the whole agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble

MANIFEST = "version: 1\nname: a\nidentity: You help.\nskills: [skills]\nmodel: scripted:s.yaml\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.yaml").write_text(MANIFEST, "utf-8")
    (tmp_path / "s.yaml").write_text("- text: Done.\n", "utf-8")
    for name, text in (
        ("good", "---\nname: good\ndescription: Does good things.\n---\n"),
        ("vague", "---\nname: vague\n---\n"),
    ):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(text, "utf-8")
    return tmp_path


WARNING = "skills/vague/SKILL.md:2:1: warning: missing required field `description` (skill skipped)"


def test_validate_keeps_it_an_error(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.code == 1
    assert "skills/vague/SKILL.md:2:1: error: missing required field `description`" in outcome.out


def test_render_skips_the_skill_and_warns_once(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = assemble(capsys, "render", "--dry-run", "--prompt-only", "agent.yaml")
    assert outcome.code == 0
    assert "- **good**: Does good things." in outcome.out
    assert "vague" not in outcome.out
    assert outcome.err.splitlines() == [WARNING]


def test_run_skips_the_skill_and_warns_once(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "run", "agent.yaml", "-p", "hi", "--no-session")
    assert outcome.code == 0, outcome.err
    assert outcome.out == "Done.\n"
    assert outcome.err.count("missing required field `description`") == 1
    assert WARNING in outcome.err
