"""Path rules on a real temporary filesystem: `..`, symlinks, outside the workspace,
and directory searches (`grep`/`find`) that reach into a denied tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.permissions.path_patterns import compile_path_pattern

RULES = PermissionsSpec(
    default="ask",
    allow=("read", "edit(src/**)", "write(src/**)", "grep(src/**)", "ls"),
    deny=("edit(tests/**)", "write(tests/**)", "read(*.env)", "grep(tests/**)"),
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for directory in ("src/pkg", "tests", "docs"):
        (root / directory).mkdir(parents=True)
    (root / "src/pkg/fee.py").write_text("x = 1\n")
    (root / "tests/test_fee.py").write_text("assert True\n")
    (root / "config.env").write_text("TOKEN=1\n")
    os.symlink(root / "tests/test_fee.py", root / "src/alias.py")
    os.symlink(root / "tests", root / "src/tests_link")
    (tmp_path / "outside.py").write_text("")
    os.symlink(tmp_path / "outside.py", root / "src/escape.py")
    return root


def _decide(workspace: Path, tool: str, **arguments: str) -> str:
    policy = PermissionPolicy.from_spec(RULES, workspace=workspace)
    return policy.decide(tool, arguments, None).verdict


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_fee.py",
        "./tests/test_fee.py",
        "src/../tests/test_fee.py",
        "src/pkg/../../tests/test_fee.py",
        "src/alias.py",  # a file symlink into tests/
        "src/tests_link/test_fee.py",  # a directory symlink into tests/
        "src/tests_link/new_file.py",  # a new file, through the link
        "tests/new.py",
        "tests",
    ],
)
def test_a_denied_tree_stays_denied_through_dots_and_symlinks(workspace: Path, path: str) -> None:
    assert _decide(workspace, "edit", path=path) == "deny"
    assert _decide(workspace, "write", path=path) == "deny"
    assert _decide(workspace, "edit", path=str(workspace / path)) == "deny"


@pytest.mark.parametrize("path", ["src/pkg/fee.py", "src/new.py", "src/pkg/../new.py"])
def test_an_allowed_tree_is_allowed(workspace: Path, path: str) -> None:
    assert _decide(workspace, "edit", path=path) == "allow"


@pytest.mark.parametrize(
    "path", ["../outside.py", "/etc/passwd", "src/escape.py", "src/../../outside.py", "~/x"]
)
def test_a_path_outside_the_workspace_never_matches_an_allow(workspace: Path, path: str) -> None:
    assert _decide(workspace, "edit", path=path) == "ask"
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="deny", allow=("edit(**)",)), workspace=workspace
    )
    assert policy.decide("edit", {"path": path}, None).verdict == "deny"


def test_a_path_that_cannot_be_checked_is_asked_about_under_a_deny_pattern(
    workspace: Path,
) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="allow", deny=("edit(tests/**)",)), workspace=workspace
    )
    decision = policy.decide("edit", {"path": "../outside.py"}, None)
    assert decision.verdict == "ask"
    assert "cannot be checked against `edit(tests/**)`" in decision.reason
    assert policy.decide("edit", {}, None).verdict == "ask"


def test_a_name_pattern_matches_at_any_depth(workspace: Path) -> None:
    assert _decide(workspace, "read", path="config.env") == "deny"
    (workspace / "src/pkg/.env").write_text("")
    assert _decide(workspace, "read", path="src/pkg/.env") == "deny"
    assert _decide(workspace, "read", path="src/pkg/fee.py") == "allow"


def test_a_directory_search_is_denied_when_it_reaches_a_denied_tree(workspace: Path) -> None:
    assert _decide(workspace, "grep", pattern="x") == "deny"  # path defaults to `.`
    assert _decide(workspace, "grep", pattern="x", path=".") == "deny"
    assert _decide(workspace, "grep", pattern="x", path="src/tests_link") == "deny"
    assert _decide(workspace, "grep", pattern="x", path="src") == "allow"
    assert _decide(workspace, "grep", pattern="x", path="src/pkg/fee.py") == "allow"
    assert _decide(workspace, "grep", pattern="x", path="docs") == "ask"


def test_an_allow_on_a_tree_covers_a_search_only_when_it_covers_all_below(
    workspace: Path,
) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=("find(src/*.py)", "grep(src/**)")),
        workspace=workspace,
    )
    assert policy.decide("find", {"pattern": "*.py", "path": "src"}, None).verdict == "ask"
    assert policy.decide("grep", {"pattern": "x", "path": "src/pkg"}, None).verdict == "allow"
    assert policy.decide("grep", {"pattern": "x", "path": "."}, None).verdict == "ask"


@pytest.mark.parametrize(
    ("pattern", "path", "matches", "reaches", "covers"),
    [
        ("src/**", "src", True, True, True),
        ("src/**", "src/a/b.py", True, True, True),
        ("src/**", ".", False, True, False),
        ("src/**", "srcx", False, False, False),
        ("src/", "src/a", True, True, True),
        ("*.py", "a/b/c.py", True, True, False),
        ("*.py", "a/b", False, True, False),
        ("**", ".", True, True, True),
        ("src/*.py", "src", False, True, False),
        ("src/*.py", "src/a.py", True, True, False),
        ("src/*.py", "src/a/b.py", False, False, False),
        ("tests/**/test_*.py", "tests", False, True, False),
        ("tests/**/test_*.py", "tests/a/test_x.py", True, True, False),
        ("tests/**/test_*.py", "tests/test_x.py", True, True, False),
        ("[ab].txt", "a.txt", True, True, False),
        ("/etc/**", "etc", False, False, False),
    ],
)
def test_path_pattern_questions(
    pattern: str, path: str, matches: bool, reaches: bool, covers: bool
) -> None:
    compiled = compile_path_pattern(pattern)
    if compiled.never:
        assert not compiled.matches(path)
        return
    assert compiled.matches(path) is matches
    assert compiled.reaches(path) is reaches
    assert compiled.covers(path) is covers
