"""Issue 22's escape corpus, hidden paths: every default credential store, planted in a
fake HOME, and one the manifest adds, is neither readable nor listable, however named."""

from __future__ import annotations

from pathlib import Path

import pytest
from escapes import Place, needs_landlock, needs_seccomp, run

from assembler.sandbox.spec import DEFAULT_HIDDEN
from assembler.tools.base import ToolResult

pytestmark = [needs_landlock, needs_seccomp]

SECRET = "s3cr3t-4f9b"
ADDED = "~/.config/private"


def plant(home: Path) -> list[Path]:
    """A secret file in every hidden place (a file where the entry is a file name, one
    inside the directory otherwise); the files planted."""
    planted = []
    for written in (*DEFAULT_HIDDEN, ADDED):
        path = home / written.removeprefix("~/")
        looks_like_file = path.name in {
            ".netrc",
            ".git-credentials",
            ".npmrc",
            ".pypirc",
            ".vault-token",
            "credentials",
            "credentials.toml",
        }
        target = path if looks_like_file else path / "key"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{SECRET} {written}\n")
        planted.append(target)
    return planted


def output(result: ToolResult) -> str:
    """What the command printed, without the notes the tool adds."""
    return result.content.split("\n[")[0]


@pytest.fixture
def planted(place: Place) -> list[Path]:
    return plant(place.home)


def test_every_hidden_path_is_unreadable(place: Place, planted: list[Path]) -> None:
    readers = " ; ".join(f"cat {p}" for p in planted)
    control = run(place.plain(), readers)
    assert control.content.count(SECRET) == len(planted), control.content
    result = run(place.boxed(hidden=[ADDED]), readers)
    assert SECRET not in result.content
    assert output(result).count("Permission denied") == len(planted), result.content


def test_hidden_directories_cannot_be_listed(place: Place, planted: list[Path]) -> None:
    directories = sorted({p.parent for p in planted if p.name == "key"})
    listing = " ; ".join(f"ls {d}" for d in directories)
    assert run(place.plain(), listing).content.count("key") == len(directories)
    result = run(place.boxed(hidden=[ADDED]), listing)
    lines = output(result).splitlines()
    assert [line for line in lines if line.endswith("key")] == []
    assert output(result).count("Permission denied") == len(directories), result.content


@pytest.mark.parametrize(
    "reader",
    [
        "cat /proc/self/root{path}",
        "cd {parent} && cat ./{name}",
        "ln -s {path} link && cat link",
        "python3 -c \"print(open('{path}').read())\"",
        "grep -r {secret} {home}",
        "cp {path} copy && cat copy",
    ],
    ids=["proc-root", "relative", "symlink", "python", "grep-r", "copy"],
)
def test_other_ways_to_read_a_hidden_file(place: Place, planted: list[Path], reader: str) -> None:
    key = place.home / ".ssh" / "key"
    command = reader.format(
        path=key, parent=key.parent, name=key.name, secret=SECRET, home=place.home
    )
    assert SECRET in run(place.plain(), command).content
    place.reset()
    assert SECRET not in run(place.boxed(), command).content


def test_the_rest_of_home_stays_readable(place: Place, planted: list[Path]) -> None:
    (place.home / "notes.txt").write_text("readable\n")
    result = run(place.boxed(), f"cat {place.home}/notes.txt")
    assert result.content == "readable"
