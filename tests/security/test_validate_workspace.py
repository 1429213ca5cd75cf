"""`workspace: /` or the home directory is accepted, but never silently (issue 11,
item 24): the file tools could read and change every file below it."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble

HEAD = "version: 1\nname: t\nidentity: You help.\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_root_directory_as_workspace_warns(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "agent.yaml").write_text(HEAD + "workspace: /\n", "utf-8")
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.out.splitlines()[0] == (
        "agent.yaml:4:12: warning: the workspace is the root directory (/): the file tools "
        "could then read and change every file in it; point `workspace` at the project "
        "[workspace]"
    )
    assert assemble(capsys, "validate", "--strict", "agent.yaml").code == 1


@pytest.mark.parametrize("written", ["~", "HOME", "../../.."])
def test_the_home_directory_as_workspace_warns(
    written: str, here: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = here / "home" / "user"
    project = home / "project"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    value = {"~": "~", "HOME": str(home), "../../..": ".."}[written]
    (project / "agent.yaml").write_text(HEAD + f"workspace: '{value}'\n", "utf-8")
    outcome = assemble(capsys, "validate", str(project / "agent.yaml"))
    assert f"warning: the workspace is your home directory ({home.resolve()})" in outcome.out


def test_an_ordinary_workspace_does_not_warn(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "ws").mkdir()
    (here / "agent.yaml").write_text(HEAD + "workspace: ws\n", "utf-8")
    assert assemble(capsys, "validate", "--strict", "agent.yaml").out == "1 manifest valid\n"
