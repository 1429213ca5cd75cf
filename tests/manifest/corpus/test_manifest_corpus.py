"""The manifest corpus: one test per case under `valid/` and `invalid/` (see README.md).

A valid case must validate without a single issue; an invalid case must report
exactly the lines of its `.expected` file, in order: message, position, severity and
JSON path, as `assemble validate` prints them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assembler.errors import Issue
from assembler.validation.validator import find_manifests, validate_file

CORPUS = Path(__file__).parent
ENV = {"MCP_TOKEN": "secret-token", "CORPUS_HOST": "mcp.example.com"}


def _cases(kind: str) -> list[Path]:
    root = CORPUS / kind
    return sorted([*root.glob("*.yaml"), *root.glob("*/agent.yaml")])


def _case_id(path: Path) -> str:
    return path.parent.name if path.name == "agent.yaml" else path.stem


VALID = _cases("valid")
INVALID = _cases("invalid")


def _validate(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> list[Issue]:
    monkeypatch.chdir(manifest.parent)
    # The corpus names servers this environment installs (`mcp-server-time`): found
    # beside the running Python even when its virtual environment is not activated.
    path = os.environ.get("PATH", "")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{path}")
    return list(validate_file(Path(manifest.name), env=ENV).issues)


def _line(issue: Issue, manifest: Path) -> str:
    text = issue.format()
    own = f"{manifest.name}:"
    text = text.removeprefix(own).lstrip() if issue.file == manifest.name else text
    return text.replace(str(manifest.parent.resolve()), "<case>")


def _expected(manifest: Path) -> list[str]:
    file = manifest.with_suffix(".expected")
    assert file.is_file(), f"{file.relative_to(CORPUS)} is missing"
    lines = file.read_text("utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def test_the_corpus_is_complete() -> None:
    """Every invalid case has its `.expected`, no `.expected` is orphaned, and there
    are enough cases to cover each area of the schema."""
    assert len(VALID) >= 8
    assert len(INVALID) >= 25
    for manifest in INVALID:
        assert manifest.with_suffix(".expected").is_file(), manifest
    for expected in CORPUS.glob("invalid/**/*.expected"):
        assert expected.with_suffix(".yaml").is_file(), f"orphaned {expected}"
    assert not list(CORPUS.glob("valid/**/*.expected")), "valid cases have no issues"


@pytest.mark.parametrize("manifest", VALID, ids=_case_id)
def test_valid_case(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    issues = _validate(manifest, monkeypatch)
    assert [issue.format() for issue in issues] == []


@pytest.mark.parametrize("manifest", INVALID, ids=_case_id)
def test_invalid_case(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    actual = [_line(issue, manifest) for issue in _validate(manifest, monkeypatch)]
    if os.environ.get("UPDATE_EXPECTED"):
        manifest.with_suffix(".expected").write_text("\n".join(actual) + "\n", "utf-8")
    assert actual, "an invalid case must report at least one issue"
    assert actual == _expected(manifest)


def test_folder_cases_are_found_as_manifests_by_validate() -> None:
    """`assemble validate tests/manifest/corpus/valid` finds the same cases the test runs."""
    found, issues = find_manifests([CORPUS / "valid"])
    assert issues == []
    sub_agents = [  # validated with their parents too
        CORPUS / "valid" / "team" / "reviewer.yaml",
        CORPUS / "valid" / "typed" / "labeler.yaml",
    ]
    assert sorted(found) == sorted([*VALID, *sub_agents])
