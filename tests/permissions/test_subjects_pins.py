"""Pins for what a rule's pattern is matched against (`permissions/subjects.py`):
each built-in tool's main argument and its default, a tool from elsewhere that shares a
built-in's name, and the reason a call that cannot be checked is asked about (found by
mutation testing, docs/testing.md). A real `PermissionPolicy` over a temporary
workspace decides."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.tools.base import Tool, ToolContext, ToolResult


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "prod.env").write_text("TOKEN=x\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    return tmp_path


def decide(
    workspace: Path, name: str, arguments: Mapping[str, Any], tool: Tool | None = None, **spec: Any
) -> tuple[str, str | None, str]:
    policy = PermissionPolicy.from_spec(PermissionsSpec(**spec), workspace=workspace)
    decision = policy.decide(name, arguments, tool)
    return decision.verdict, decision.rule, decision.reason


def test_find_is_matched_on_the_tree_it_searches(workspace: Path) -> None:
    deny: dict[str, Any] = {"default": "allow", "deny": ("find(secrets/**)",)}
    # no path: the whole workspace, which holds `secrets/`
    assert decide(workspace, "find", {"pattern": "*"}, **deny)[:2] == ("deny", "find(secrets/**)")
    assert decide(workspace, "find", {"pattern": "*", "path": "."}, **deny)[0] == "deny"
    assert decide(workspace, "find", {"pattern": "*", "path": "src"}, **deny)[0] == "allow"


def test_ls_is_matched_on_the_directory_it_lists(workspace: Path) -> None:
    deny: dict[str, Any] = {"default": "allow", "deny": ("ls(secrets)",)}
    assert decide(workspace, "ls", {"path": "secrets"}, **deny)[:2] == ("deny", "ls(secrets)")
    assert decide(workspace, "ls", {"path": "src"}, **deny)[0] == "allow"
    # no path: the workspace itself, which `ls(.)` names
    root_only: dict[str, Any] = {"default": "ask", "allow": ("ls(.)",)}
    assert decide(workspace, "ls", {}, **root_only)[:2] == ("allow", "ls(.)")


def test_allow_for_the_session_of_the_whole_workspace_names_it(workspace: Path) -> None:
    """What "allow for the session" adds for a listing or search with no path: a rule
    that names the workspace, and allows the same call when it comes again."""
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=workspace)
    assert policy.session_rules_for("ls", {}, None) == ("ls(./.)",)
    assert policy.session_rules_for("find", {"pattern": "*"}, None) == ("find(**)",)
    for name, arguments in (("ls", {}), ("find", {"pattern": "*"})):
        (rule,) = policy.session_rules_for(name, arguments, None)
        assert policy.with_session_rule(rule).decide(name, arguments, None).verdict == "allow"


def test_a_tool_from_elsewhere_named_like_a_builtin_is_matched_on_its_own_argument(
    workspace: Path,
) -> None:
    """An MCP server's `read` takes a `uri`, not a workspace path."""
    tool = Tool(
        "read",
        "d",
        {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
        _noop,
        source="mcp:docs",
    )
    spec: dict[str, Any] = {"default": "ask", "allow": ("read(docs://*)",)}
    assert decide(workspace, "read", {"uri": "docs://intro"}, tool, **spec)[0] == "allow"
    assert decide(workspace, "read", {"uri": "file:///etc/passwd"}, tool, **spec)[0] == "ask"


def test_an_empty_main_argument_name_falls_back_to_the_first_required_string(
    workspace: Path,
) -> None:
    tool = Tool(
        "deploy",
        "d",
        {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]},
        _noop,
        source="python:ops:deploy",
        main_argument="",
    )
    spec: dict[str, Any] = {"default": "allow", "deny": ("deploy(prod*)",)}
    assert decide(workspace, "deploy", {"target": "prod-eu"}, tool, **spec)[0] == "deny"
    assert decide(workspace, "deploy", {"target": "staging"}, tool, **spec)[0] == "allow"


def test_a_tool_without_a_main_argument_is_asked_about_and_the_reason_says_so(
    workspace: Path,
) -> None:
    """No `required` list: no argument is the main one, so a deny pattern cannot be
    checked, and the call is not allowed without asking."""
    tool = Tool(
        "deploy",
        "d",
        {"type": "object", "properties": {"target": {"type": "string"}}},
        _noop,
        source="python:ops:deploy",
    )
    verdict, rule, reason = decide(
        workspace, "deploy", {"target": "prod"}, tool, default="allow", deny=("deploy(prod)",)
    )
    assert (verdict, rule) == ("ask", None)
    assert reason == (
        "cannot be checked against `deploy(prod)`: `deploy` has no main argument to match"
    )


def test_a_call_whose_path_cannot_be_checked_is_asked_about_and_says_why(
    workspace: Path,
) -> None:
    deny: dict[str, Any] = {"default": "allow", "deny": ("read(secrets/**)",)}
    missing = decide(workspace, "read", {"path": 7}, **deny)
    assert missing == (
        "ask",
        None,
        "cannot be checked against `read(secrets/**)`: the `path` argument is missing or "
        "not a string",
    )
    outside = decide(workspace, "read", {"path": "../elsewhere"}, **deny)
    assert outside[0] == "ask"
    assert outside[2].startswith(
        "cannot be checked against `read(secrets/**)`: the path cannot be checked: "
    )
