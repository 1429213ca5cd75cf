"""Pins for path patterns (`permissions/path_patterns.py`), decided by a real policy over
a real workspace: the glob characters inside a name, a directory rule that reaches (or
covers) a search, the anchor "allow for the session" writes, and the warning for a
pattern that can never match. Each was a mutant no test noticed (issue 28, round 3).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.validation.validator import validate_file


def verdict(workspace: Path, spec: PermissionsSpec, tool: str, **arguments: str) -> str:
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    return policy.decide(tool, arguments, None).verdict


@pytest.mark.parametrize(
    ("pattern", "path", "denied"),
    [
        ("secret*", "secret.txt", True),  # a star ends the name
        ("secret*", "data/secret", True),
        ("secret*", "my-secret.txt", False),
        ("*key*", "apikey.txt", True),
        ("*key*", "apiley.txt", False),
        ("te**st.txt", "test.txt", True),  # `**` inside a name is one `*`
        ("te**st.txt", "te-x-st.txt", True),
        ("te**st.txt", "te/st.txt", False),
        ("te**st.txt", "tex.txt", False),
        ("te**st.txt", "tet.txt", False),
        ("logs**", "logs-old", True),
        ("config.?nv", "config.env", True),
        ("config.?nv", "config.nv", False),
        ("config.?nv", "config.?nv", True),
        ("log[!0-9].txt", "logx.txt", True),
        ("log[!0-9].txt", "log1.txt", False),
        ("log[!ab].txt", "logb.txt", False),
        ("log[!ab].txt", "logc.txt", True),
        ("file[12].txt", "file1.txt", True),
        ("file[12].txt", "file3.txt", False),
        ("file[12].txt", "file[.txt", False),
        ("file[12].txt", "file\\.txt", False),
        ("a[\\b].txt", "a\\.txt", True),  # a backslash in a class is itself
        ("a[\\b].txt", "ab.txt", True),
        ("data[1.txt", "data[1.txt", True),  # an unclosed `[` is a plain character
        ("data[1.txt", "data1.txt", False),
        ("src//secret.txt", "src/secret.txt", True),  # written as a path is normalised
        ("src/./secret.txt", "src/secret.txt", True),
        ("./top.env", "top.env", True),
        ("./top.env", "sub/top.env", False),
    ],
)
def test_a_read_deny_rule_matches_exactly_what_its_pattern_says(
    tmp_path: Path, pattern: str, path: str, denied: bool
) -> None:
    spec = PermissionsSpec(default="allow", deny=(f"read({pattern})",))
    assert (verdict(tmp_path, spec, "read", path=path) == "deny") is denied, (pattern, path)


def test_a_rule_on_a_directory_entry_does_not_reach_a_search_below_it(tmp_path: Path) -> None:
    # `./build` is the entry itself; `build/` would be the directory and all it holds
    (tmp_path / "build" / "sub").mkdir(parents=True)
    spec = PermissionsSpec(default="allow", deny=("grep(./build)",))
    assert verdict(tmp_path, spec, "grep", pattern="x", path="build/sub") == "allow"
    assert verdict(tmp_path, spec, "grep", pattern="x", path=".") == "deny"
    whole = PermissionsSpec(default="allow", deny=("grep(build/)",))
    assert verdict(tmp_path, whole, "grep", pattern="x", path="build/sub") == "deny"


def test_an_allow_rule_covers_a_search_only_where_it_matches_everything_below(
    tmp_path: Path,
) -> None:
    (tmp_path / "src" / "pkg" / "deep").mkdir(parents=True)
    one_level = PermissionsSpec(default="ask", allow=("grep(src/*)",))
    assert verdict(tmp_path, one_level, "grep", pattern="x", path="src/pkg/deep") == "ask"
    # `**` matches no directory too: `src/**/pkg/**` covers `src/pkg` and below
    nested = PermissionsSpec(default="ask", allow=("grep(src/**/pkg/**)",))
    assert verdict(tmp_path, nested, "grep", pattern="x", path="src/pkg") == "allow"
    assert verdict(tmp_path, nested, "grep", pattern="x", path="src/pkg/deep") == "allow"
    assert verdict(tmp_path, nested, "grep", pattern="x", path="src") == "ask"
    exact = PermissionsSpec(default="ask", allow=("grep(src/pkg/**)",))
    assert verdict(tmp_path, exact, "grep", pattern="x", path="src/pkg/deep") == "allow"
    assert verdict(tmp_path, exact, "grep", pattern="x", path="src/other") == "ask"
    assert verdict(tmp_path, exact, "grep", pattern="x", path="src/pkg/deep/x/y") == "allow"


def test_allowing_a_directory_search_for_the_session_covers_that_directory_only(
    tmp_path: Path,
) -> None:
    for directory in ("src", "lib/src"):
        (tmp_path / directory).mkdir(parents=True)
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=tmp_path)
    for name in ("src", "src/"):
        (rule,) = policy.session_rules_for("grep", {"pattern": "x", "path": name}, None)
        assert rule == "grep(./src/**)"
    policy = policy.with_session_rule(rule)
    assert policy.decide("grep", {"pattern": "x", "path": "src"}, None).verdict == "allow"
    assert policy.decide("grep", {"pattern": "x", "path": "lib/src"}, None).verdict == "ask"


def test_a_pattern_with_dot_dot_is_a_warning_that_it_never_matches(tmp_path: Path) -> None:
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        'version: 1\nname: demo\nidentity: x\npermissions:\n  deny: ["edit(src/../secret.txt)"]\n',
        "utf-8",
    )
    lines = [issue.format() for issue in validate_file(manifest).issues]
    assert [line.split(": warning: ")[1] for line in lines] == [
        "`edit(src/../secret.txt)` can never match: paths are matched after `..` is resolved, "
        "so a pattern with `..` never matches [permissions.deny[0]]"
    ]


@pytest.mark.parametrize(
    ("pattern", "denied"), [("*", False), ("?", False), (".", True), ("**", True)]
)
def test_the_workspace_root_is_matched_by_dot_and_double_star_not_by_a_name_pattern(
    tmp_path: Path, pattern: str, denied: bool
) -> None:
    spec = PermissionsSpec(default="allow", deny=(f"ls({pattern})",))
    assert (verdict(tmp_path, spec, "ls", path=".") == "deny") is denied


def test_a_directory_rule_inside_a_wider_deny_is_a_warning_that_it_never_applies(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: demo\nidentity: x\n"
        'permissions:\n  allow: ["edit(src/)"]\n  deny: ["edit(src/**)"]\n',
        "utf-8",
    )
    lines = [issue.format() for issue in validate_file(manifest).issues]
    assert [line.split(": warning: ")[1] for line in lines] == [
        "`edit(src/)` never applies: `edit(src/**)` in `deny` (permissions.deny[0]) matches "
        "the same calls first [permissions.allow[0]]"
    ]


@pytest.mark.parametrize(("pattern", "nested_denied"), [(".", True), ("./.", False), ("**", True)])
def test_a_lone_dot_is_the_whole_workspace_and_dot_slash_dot_its_top_only(
    tmp_path: Path, pattern: str, nested_denied: bool
) -> None:
    """README: `.` alone is the workspace and everything in it; `./.` the top only."""
    (tmp_path / "src" / "deep").mkdir(parents=True)
    spec = PermissionsSpec(default="allow", deny=(f"ls({pattern})",))
    assert verdict(tmp_path, spec, "ls", path=".") == "deny"
    assert (verdict(tmp_path, spec, "ls", path="src/deep") == "deny") is nested_denied
