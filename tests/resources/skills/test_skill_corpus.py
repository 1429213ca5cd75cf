"""The SKILL.md corpus: one test per case folder under `cases/valid` and `cases/invalid`.

Each case folder holds exactly one skill folder (its name matters: the skill name
must match it) and, optionally, `expected.txt`: one expected issue per line as
`severity:line:column: message substring`, `#` comments, blank lines, and an
optional `profile: spec` line. Every actual issue must be matched by exactly one
expected line and the other way round. A valid case without `expected.txt` must load
without any issue under both profiles; an invalid case must not load.

A SKILL.md that is not UTF-8 is stored as `SKILL.md.bytes` (ruff formats Markdown
files and stops on one it cannot decode) and copied to a temporary folder of the same
name before the test.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from assembler.errors import Issue
from assembler.resources.skills import PROFILES, parse_skill

CASES = Path(__file__).parent / "cases"


@dataclass(frozen=True)
class Expected:
    severity: str
    line: int
    column: int
    text: str

    def matches(self, issue: Issue) -> bool:
        return (issue.severity, issue.line, issue.column) == (
            self.severity,
            self.line,
            self.column,
        ) and self.text in issue.message


def _case_dirs(kind: str) -> list[Path]:
    return sorted(path for path in (CASES / kind).iterdir() if path.is_dir())


def _read_expected(case: Path) -> tuple[str | None, list[Expected]]:
    file = case / "expected.txt"
    if not file.exists():
        return None, []
    profile: str | None = None
    expected: list[Expected] = []
    for raw in file.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("profile:"):
            profile = line.removeprefix("profile:").strip()
            continue
        severity, number, column, text = line.split(":", 3)
        expected.append(Expected(severity, int(number), int(column), text.strip()))
    return profile, expected


def _materialise(case: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(the case's SKILL.md, the display root), copying a `SKILL.md.bytes` if needed."""
    folders = [path for path in case.iterdir() if path.is_dir()]
    assert len(folders) == 1, f"{case} must hold exactly one skill folder"
    stored = folders[0] / "SKILL.md.bytes"
    if not stored.exists():
        return folders[0] / "SKILL.md", case
    copy = tmp_path / case.name / folders[0].name / "SKILL.md"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(stored.read_bytes())
    return copy, tmp_path / case.name


def _compare(issues: list[Issue], expected: list[Expected]) -> None:
    unmatched = list(issues)
    missing: list[Expected] = []
    for want in expected:
        hit = next((issue for issue in unmatched if want.matches(issue)), None)
        if hit is None:
            missing.append(want)
        else:
            unmatched.remove(hit)
    shown = "\n".join(f"  {i.severity}:{i.line}:{i.column}: {i.message}" for i in issues)
    assert not missing and not unmatched, f"missing {missing}; unexpected {unmatched}\n{shown}"


def test_corpus_is_present() -> None:
    assert len(_case_dirs("valid")) >= 20
    assert len(_case_dirs("invalid")) >= 30
    for case in _case_dirs("invalid"):
        assert (case / "expected.txt").exists(), f"{case.name} needs an expected.txt"


@pytest.mark.parametrize("case", _case_dirs("valid"), ids=lambda path: path.name)
def test_valid_case(case: Path, tmp_path: Path) -> None:
    skill_md, root = _materialise(case, tmp_path)
    profile, expected = _read_expected(case)
    for each in [profile] if profile or expected else list(PROFILES):
        skill, issues = parse_skill(skill_md, profile=each or "lenient", display_root=root)
        _compare(issues, expected)
        assert skill is not None
        assert skill.path == skill_md.absolute()
        assert skill.directory == skill_md.parent.absolute()
        assert skill.name and skill.description


@pytest.mark.parametrize("case", _case_dirs("invalid"), ids=lambda path: path.name)
def test_invalid_case(case: Path, tmp_path: Path) -> None:
    skill_md, root = _materialise(case, tmp_path)
    profile, expected = _read_expected(case)
    skill, issues = parse_skill(skill_md, profile=profile or "lenient", display_root=root)
    _compare(issues, expected)
    assert skill is None
    shown = f"{skill_md.parent.name}/SKILL.md"
    assert {issue.file for issue in issues} == {shown}
