"""Tab completion's candidates (`cli/completion.py`); on a real terminal in
`test_terminal_input.py`."""

from __future__ import annotations

import os
from pathlib import Path

from assembler.cli.completion import MAX_CANDIDATES, Completer, workspace_paths


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src" / "deep").mkdir(parents=True)
    (work / "src" / "app.py").write_text("")
    (work / "src" / "api.py").write_text("")
    (work / ".env").write_text("SECRET=1\n")
    (work / "notes.txt").write_text("")
    (tmp_path / "outside.txt").write_text("")
    os.symlink(tmp_path, work / "escape")
    return work


def test_paths_complete_inside_the_workspace_only(tmp_path: Path) -> None:
    work = workspace(tmp_path)
    assert workspace_paths(work, "") == ["escape/", "notes.txt", "src/"]  # no hidden ones
    assert workspace_paths(work, ".") == [".env"]
    assert workspace_paths(work, "src/a") == ["src/api.py", "src/app.py"]
    assert workspace_paths(work, "src/d") == ["src/deep/"]
    assert workspace_paths(work, "../") == []
    assert workspace_paths(work, "/etc/") == []
    assert workspace_paths(work, "escape/") == []  # a link leading out
    assert workspace_paths(work, "nothing/") == []


def test_a_huge_directory_offers_the_first_entries(tmp_path: Path) -> None:
    for number in range(MAX_CANDIDATES + 5):
        (tmp_path / f"f{number:04}").write_text("")
    found = workspace_paths(tmp_path, "f")
    assert len(found) == MAX_CANDIDATES and found[0] == "f0000"


def test_commands_complete_as_the_first_word_only(tmp_path: Path) -> None:
    work = workspace(tmp_path)
    completer = Completer(work, lambda: ["session", "compact", "help", "hello"])
    assert completer.candidates("/he", "/he") == ["/hello ", "/help "]
    assert completer.candidates("/he", "say /he") == []
    assert completer.candidates("@no", "read @no") == ["@notes.txt"]
    completer.line = lambda: "/s"
    assert [completer.complete("/s", n) for n in range(2)] == ["/session ", None]
