"""Pins for the rule language (`permissions/rules.py`): what a rule names, and where
`validate` points when one is malformed (found by mutation testing, docs/testing.md).

Every malformed rule is refused (the build refuses what `validate` reports), and the
offset is the column `validate` shows: the character a person has to fix."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.errors import PermissionRuleError
from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy, parse_rule
from assembler.tools.base import Tool, ToolContext, ToolResult


@pytest.mark.parametrize(
    ("text", "offset", "words"),
    [
        (" read", 0, "remove the spaces"),
        ("read ", 4, "remove the spaces"),
        ("bash(git status", 15, "must end with `)`"),
        ("(", 1, "must end with `)`"),
        ("()", 1, "empty pattern"),
        ("bash( )", 5, "empty pattern"),
        ("(x)", 0, "a tool name is"),
        ("1bash", 0, "a tool name is"),
        ("ba d", 2, "a tool name is"),
        ("mcp:", 4, "an MCP rule is"),
        ("mcp:!x", 4, "an MCP rule is"),
        ("mcp:git!hub", 7, "an MCP rule is"),
        ("", 0, "a rule is a tool name"),
        ("   ", 0, "a rule is a tool name"),
    ],
)
def test_a_malformed_rule_is_refused_at_the_character_to_fix(
    text: str, offset: int, words: str
) -> None:
    with pytest.raises(PermissionRuleError) as caught:
        parse_rule(text)
    assert (caught.value.offset, words in caught.value.reason) == (offset, True), caught.value


def test_a_malformed_rule_stops_the_policy_from_being_built(tmp_path: Path) -> None:
    for text in ("bash(git status", " read", "mcp:", "()"):
        with pytest.raises(PermissionRuleError):
            PermissionPolicy.from_spec(PermissionsSpec(deny=(text,)), workspace=tmp_path)


def test_the_pattern_is_everything_between_the_first_paren_and_the_last() -> None:
    rule = parse_rule("bash(echo (a) b)")
    assert (rule.tool, rule.pattern, rule.server) == ("bash", "echo (a) b", None)
    assert parse_rule("edit(x)").pattern == "x"
    assert parse_rule("read").pattern is None


def test_an_mcp_rule_names_its_server_and_all_or_one_of_its_tools() -> None:
    whole = parse_rule("mcp:github")
    assert (whole.server, whole.tool, whole.pattern) == ("github", "*", None)
    one = parse_rule("mcp:github/create_issue(title *)")
    assert (one.server, one.tool, one.pattern) == ("github", "create_issue", "title *")


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


def test_a_bare_mcp_rule_denies_every_tool_of_that_server_only(tmp_path: Path) -> None:
    spec = PermissionsSpec(default="allow", deny=("mcp:github",))
    policy = PermissionPolicy.from_spec(spec, workspace=tmp_path)
    push = Tool("push", "d", {"type": "object"}, _noop, source="mcp:github")
    other = Tool("push", "d", {"type": "object"}, _noop, source="mcp:gitlab")
    assert policy.decide("push", {}, push).verdict == "deny"
    assert policy.decide("push", {}, other).verdict == "allow"


def test_a_deny_rule_denies_the_command_its_pattern_names(tmp_path: Path) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(git push)",))
    policy = PermissionPolicy.from_spec(spec, workspace=tmp_path)
    assert policy.decide("bash", {"command": "git push"}, None).verdict == "deny"
    assert policy.decide("bash", {"command": "git pull"}, None).verdict == "allow"


def test_validate_does_not_call_a_wildcard_rule_an_unknown_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git_*` and `mcp_?` name tools that may come at run time: no "no active tool is
    named" warning; a plain unknown name still gets one."""
    from assembler.validation.validator import validate_file

    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.yaml").write_text(
        'version: 1\nname: demo\nidentity: x\npermissions:\n  allow: ["git_*", "mcp_?", "wirte"]\n',
        "utf-8",
    )
    lines = [issue.format() for issue in validate_file(Path("agent.yaml")).issues]
    assert len(lines) == 1 and "no active tool is named `wirte`" in lines[0], lines
