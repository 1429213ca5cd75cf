"""Where a session's workspace started and what its runs changed, against real git:
a commit, the diff on top (binary too), untracked files; rebuilt elsewhere
(`regress.start.rebuild`) byte for byte; what cannot be rebuilt says why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from assembler.errors import ConversionError
from assembler.regress.start import rebuild
from assembler.sessions.workspace_record import TouchedFiles, record_end, record_start


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "app" / "src").mkdir(parents=True)
    (root / "app" / "src" / "fees.py").write_text("FEE = 1\n", "utf-8")
    (root / "app" / "logo.bin").write_bytes(bytes(range(256)))
    (root / "app" / "old.txt").write_text("going\n", "utf-8")
    (root / "other.txt").write_text("outside the workspace\n", "utf-8")
    (root / ".gitignore").write_text("*.log\n", "utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


def dirty(workspace: Path) -> None:
    """A diff (text and binary), a deletion, untracked and ignored files."""
    (workspace / "src" / "fees.py").write_text("FEE = 2\n", "utf-8")
    (workspace / "logo.bin").write_bytes(bytes(reversed(range(256))))
    (workspace / "old.txt").unlink()
    (workspace / "notes.md").write_text("untracked\n", "utf-8")
    (workspace / "run.log").write_text("ignored\n", "utf-8")


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def test_a_git_workspace_records_commit_diff_and_untracked_files(repo: Path) -> None:
    workspace = repo / "app"
    dirty(workspace)
    start = record_start(workspace)
    assert start["kind"] == "git" and start["complete"] is True
    assert start["path"] == "app"
    assert start["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert "FEE = 2" in start["diff"] and "GIT binary patch" in start["diff"]
    assert [u["path"] for u in start["untracked"]] == ["notes.md"]  # not the ignored log
    assert sorted(c["path"] for c in start["changed"]) == ["logo.bin", "old.txt", "src/fees.py"]


def test_the_start_is_rebuilt_elsewhere_byte_for_byte(repo: Path, tmp_path: Path) -> None:
    workspace = repo / "app"
    dirty(workspace)
    (workspace / "run.log").unlink()
    start = record_start(workspace)
    start_file = repo / "start.json"
    start_file.write_text(json.dumps(start), "utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    rebuilt = rebuild(start_file, scratch)
    assert rebuilt == scratch / "app"
    assert tree(rebuilt) == tree(workspace)
    # later commits and edits in the repository do not change what is rebuilt
    (workspace / "src" / "fees.py").write_text("FEE = 3\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "later")
    again = tmp_path / "again"
    again.mkdir()
    assert (rebuild(start_file, again) / "src" / "fees.py").read_text("utf-8") == "FEE = 2\n"


def test_an_untracked_file_cannot_be_written_outside_the_workspace(
    repo: Path, tmp_path: Path
) -> None:
    start = record_start(repo / "app")
    start["untracked"] = [{"path": "../escape.txt", "text": "out"}]
    start_file = repo / "start.json"
    start_file.write_text(json.dumps(start), "utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(ConversionError) as caught:
        rebuild(start_file, scratch)
    assert "outside the workspace" in str(caught.value)
    assert not (scratch / "escape.txt").exists()


def test_what_cannot_be_rebuilt_says_why(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    start = record_start(plain)
    assert start["complete"] is False and "is not in a git work tree" in start["reason"]
    (repo / "app" / "big.txt").write_text("x" * 5000, "utf-8")
    start = record_start(repo / "app", limit=1000)
    assert start["complete"] is False and "over the 1000 bytes a session records" in start["reason"]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    assert "has no commit yet" in record_start(fresh)["reason"]


def test_the_end_holds_every_file_that_differs_from_the_start(repo: Path) -> None:
    workspace = repo / "app"
    (workspace / "notes.md").write_text("before\n", "utf-8")
    start = record_start(workspace)
    (workspace / "src" / "fees.py").write_text("FEE = 5\n", "utf-8")  # a command's change
    (workspace / "old.txt").unlink()
    (workspace / "new.txt").write_text("made\n", "utf-8")
    end = record_end(workspace, start)
    changed = {c["path"]: c for c in end["changed"]}
    assert end["complete"] is True
    assert set(changed) == {"src/fees.py", "old.txt", "new.txt"}  # notes.md is as it was
    assert changed["src/fees.py"]["text"] == "FEE = 5\n"
    assert changed["old.txt"]["deleted"] is True


def test_outside_git_the_end_holds_the_files_the_file_tools_wrote(tmp_path: Path) -> None:
    workspace = tmp_path / "plain"
    workspace.mkdir()
    (workspace / "a.txt").write_text("written\n", "utf-8")
    touched = TouchedFiles()
    touched.note("write", {"path": "a.txt"})
    touched.note("read", {"path": "b.txt"})  # not a writer
    touched.note("write", {"path": "../outside.txt"})
    end = record_end(workspace, record_start(workspace), touched.paths)
    assert [c["path"] for c in end["changed"]] == ["a.txt"]


def test_no_filter_program_of_the_repository_runs(repo: Path, tmp_path: Path) -> None:
    """A clean or smudge filter is a program `.git/config` names (which a file tool
    can write): recording, comparing and rebuilding run none of them."""
    ran = tmp_path / "ran"
    (repo / ".gitattributes").write_text("*.py filter=evil\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "attributes")
    for part in ("clean", "smudge", "process"):
        git(repo, "config", f"filter.evil.{part}", f"touch {ran}-{part}; cat")
    (repo / "app" / "src" / "fees.py").write_text("FEE = 9\n", "utf-8")
    start = record_start(repo / "app")
    assert start["complete"] is True and "FEE = 9" in start["diff"]
    record_end(repo / "app", start)
    start_file = repo / "start.json"
    start_file.write_text(json.dumps(start), "utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    rebuild(start_file, scratch)
    assert not list(tmp_path.glob("ran-*"))
    # the filter is real: git itself runs it
    git(repo, "diff", "HEAD", "--", "app")
    assert list(tmp_path.glob("ran-*"))
