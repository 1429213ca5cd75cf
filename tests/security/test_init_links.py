"""Issue 20, item 25: `assemble init` writes inside the directory it is given, or nothing.

`init` checked that no file it writes exists, then wrote them one by one. A symbolic
link in the directory (a cloned repository can hold any) led the writes elsewhere:
`.assembler -> ~/.config/some-tool` put the schema copy there, `skills -> /elsewhere`
a skill. A dangling link was taken for "nothing here" (a later write then failed half
way, leaving some files written), and a dangling directory link crashed. Now every link
on the way to a file is checked first: one that leads out of the directory, or nowhere,
is refused up front, with nothing written anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from clirun import assemble


def everything(*roots: Path) -> set[str]:
    """Every path under `roots` (links not followed), to see that nothing was written."""
    return {str(p) for root in roots for p in root.rglob("*")}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    target, outside = tmp_path / "project", tmp_path / "outside"
    target.mkdir()
    outside.mkdir()
    monkeypatch.chdir(tmp_path)
    return target, outside


@pytest.mark.parametrize(
    ("link", "leads_to"),
    [
        (".assembler", "outside"),  # a directory link out: the schema copy went there
        ("skills", "outside"),
        ("AGENTS.md", "outside/AGENTS.md"),  # a dangling link to a file outside
        ("agent.yaml", "nowhere/agent.yaml"),  # dangling: a later write failed half way
        (".assembler", "nowhere"),  # a dangling directory link: it crashed
        ("evals", "project/../outside"),
    ],
)
def test_a_link_out_of_the_directory_or_to_nothing_is_refused_with_nothing_written(
    link: str, leads_to: str, places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    target, _ = places
    os.symlink(target.parent / leads_to, target / link)
    before = everything(target.parent)
    outcome = assemble(capsys, "init", str(target), "--template", "coding")
    assert outcome.code == 1, outcome.out + outcome.err
    assert f"{link} is a symbolic link" in outcome.err
    assert "nothing was written" in outcome.err
    assert everything(target.parent) == before


def test_a_link_that_stays_inside_is_followed(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    target, _ = places
    (target / "real-skills").mkdir()
    os.symlink("real-skills", target / "skills")
    outcome = assemble(capsys, "init", str(target), "--template", "coding")
    assert outcome.code == 0, outcome.err
    assert (target / "real-skills" / "fix-a-failing-test" / "SKILL.md").is_file()


def test_the_directory_itself_may_be_a_link(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    target, outside = places
    os.symlink(outside, target / "here")
    outcome = assemble(capsys, "init", str(target / "here"))
    assert outcome.code == 0, outcome.err  # named on the command line: the user's choice
    assert (outside / "agent.yaml").is_file()
