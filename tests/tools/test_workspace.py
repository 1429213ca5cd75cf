"""Path confinement on a real filesystem: components, not string prefixes; symlinks resolved."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.errors import ToolError
from assembler.tools.builtin.workspace import display_path, resolve_in_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "ws-evil").mkdir()
    (tmp_path / "ws-evil" / "x").write_text("evil\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return workspace


def test_relative_path_resolves_against_the_workspace(ws: Path) -> None:
    assert resolve_in_workspace(ws, "src/main.py") == (ws / "src" / "main.py").resolve()


def test_absolute_path_inside_is_accepted(ws: Path) -> None:
    path = str(ws / "src" / "main.py")
    assert resolve_in_workspace(ws, path) == (ws / "src" / "main.py").resolve()


def test_the_workspace_itself_resolves_for_reading(ws: Path) -> None:
    assert resolve_in_workspace(ws, ".") == ws.resolve()
    assert resolve_in_workspace(ws, "src/..") == ws.resolve()


def test_sibling_with_common_string_prefix_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "../ws-evil/x")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, str(ws.parent / "ws-evil" / "x"))
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "../ws-evil/new.txt", for_write=True)
    assert not (ws.parent / "ws-evil" / "new.txt").exists()


@pytest.mark.parametrize("path", ["/etc/passwd", "..", "src/../../outside.txt", "../outside.txt"])
def test_paths_leaving_the_workspace_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, path)


def test_symlink_inside_pointing_outside_is_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "leak").symlink_to(tmp_path / "outside.txt")
    for for_write in (False, True):
        with pytest.raises(ToolError, match="outside the workspace"):
            resolve_in_workspace(ws, "leak", for_write=for_write)


def test_directory_symlink_pointing_outside_is_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "evil_dir").symlink_to(tmp_path / "ws-evil", target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "evil_dir/x")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "evil_dir/new.txt", for_write=True)


def test_dangling_symlink_is_refused_and_nothing_is_created(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "created-by-write.txt"
    (ws / "dangling").symlink_to(target)
    with pytest.raises(ToolError, match="does not exist"):
        resolve_in_workspace(ws, "dangling", for_write=True)
    assert not target.exists()
    # A dangling link to a place inside the workspace is refused too: it is still a
    # link whose target nobody has checked exists.
    (ws / "dangling_inside").symlink_to(ws / "not-yet")
    with pytest.raises(ToolError, match="does not exist"):
        resolve_in_workspace(ws, "dangling_inside", for_write=True)
    assert not (ws / "not-yet").exists()


def test_symlink_loop_is_refused(ws: Path) -> None:
    (ws / "loop_a").symlink_to(ws / "loop_b")
    (ws / "loop_b").symlink_to(ws / "loop_a")
    with pytest.raises(ToolError):
        resolve_in_workspace(ws, "loop_a", for_write=True)


def test_symlink_inside_pointing_inside_works(ws: Path) -> None:
    (ws / "alias.py").symlink_to(ws / "src" / "main.py")
    (ws / "srclink").symlink_to(ws / "src", target_is_directory=True)
    real = (ws / "src" / "main.py").resolve()
    assert resolve_in_workspace(ws, "alias.py") == real
    assert resolve_in_workspace(ws, "alias.py", for_write=True) == real
    assert resolve_in_workspace(ws, "srclink/main.py") == real
    assert resolve_in_workspace(ws, "srclink/new.py", for_write=True) == real.parent / "new.py"


def test_workspace_reached_through_a_symlink(ws: Path, tmp_path: Path) -> None:
    link = tmp_path / "ws_link"
    link.symlink_to(ws, target_is_directory=True)
    assert resolve_in_workspace(link, "src/main.py") == (ws / "src" / "main.py").resolve()
    assert resolve_in_workspace(link, str(link / "src" / "main.py")).name == "main.py"
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(link, "../ws-evil/x")


def test_writing_to_a_directory_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="directory"):
        resolve_in_workspace(ws, "src", for_write=True)
    with pytest.raises(ToolError, match="directory"):
        resolve_in_workspace(ws, ".", for_write=True)


@pytest.mark.parametrize("path", ["", "   ", "a\x00b"])
def test_malformed_paths_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError):
        resolve_in_workspace(ws, path)


def test_missing_workspace_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="not an existing directory"):
        resolve_in_workspace(tmp_path / "nope", "a.txt")


def test_nonexistent_paths_inside_are_allowed_for_writing(ws: Path) -> None:
    path = resolve_in_workspace(ws, "new/deep/file.txt", for_write=True)
    assert path == ws.resolve() / "new" / "deep" / "file.txt"
    assert not path.parent.exists()  # resolving creates nothing


def test_display_path_is_relative_and_posix(ws: Path) -> None:
    assert display_path(ws, ws.resolve() / "src" / "main.py") == "src/main.py"
    assert display_path(ws, ws.resolve()) == "."
    assert os.sep not in display_path(ws, ws.resolve() / "a" / "b") or os.sep == "/"
