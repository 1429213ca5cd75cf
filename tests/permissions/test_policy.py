"""The decision: precedence, defaults, modes, nobody to answer, session rules, MCP
and Python tools' main arguments."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.errors import PermissionRuleError
from assembler.manifest.model import PermissionsSpec
from assembler.permissions import NEEDS_APPROVAL, PermissionPolicy
from assembler.tools.base import Tool, ToolContext, ToolResult


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


def _tool(name: str, source: str, parameters: Mapping[str, Any], main: str | None = None) -> Tool:
    return Tool(name, "d", parameters, _noop, source=source, main_argument=main)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    return tmp_path


RULES = ["edit", "edit(tests/**)", "edit(**)", "edit(*.py)"]


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_deny_wins_whatever_the_order(workspace: Path, order: tuple[int, ...]) -> None:
    """The same rules in every order of the lists and within them."""
    allow = tuple(RULES[i] for i in order)
    spec = PermissionsSpec(default="allow", allow=allow, ask=allow[:2], deny=("edit(tests/**)",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    decision = policy.decide("edit", {"path": "tests/test_fee.py"}, None)
    assert (decision.verdict, decision.rule) == ("deny", "edit(tests/**)")
    assert policy.decide("edit", {"path": "src/a.py"}, None).verdict in ("ask", "allow")


def test_precedence_deny_then_ask_then_allow_then_default(workspace: Path) -> None:
    spec = PermissionsSpec(
        default="deny", allow=("bash", "read"), ask=("bash(git push *)",), deny=("bash(rm *)",)
    )
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    call = lambda command: policy.decide("bash", {"command": command}, None)  # noqa: E731
    assert (call("rm x").verdict, call("rm x").rule) == ("deny", "bash(rm *)")
    assert (call("git push origin").verdict, call("git push origin").rule) == (
        "ask",
        "bash(git push *)",
    )
    assert (call("ls").verdict, call("ls").rule) == ("allow", "bash")
    decision = policy.decide("write", {"path": "x", "content": ""}, None)
    assert (decision.verdict, decision.origin) == ("deny", "default")


def test_without_permissions_everything_is_allowed(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(None, workspace=workspace)
    decision = policy.decide("bash", {"command": 'eval "$x"'}, None)
    assert (decision.verdict, decision.origin) == ("allow", "default")


@pytest.mark.parametrize(
    ("mode", "tool", "arguments", "verdict"),
    [
        ("default", "edit", {"path": "src/a.py"}, "ask"),
        ("accept-edits", "edit", {"path": "src/a.py"}, "allow"),
        ("accept-edits", "write", {"path": "new.py"}, "allow"),
        ("accept-edits", "write", {"path": "../outside.py"}, "ask"),
        ("accept-edits", "bash", {"command": "touch x"}, "ask"),
        ("accept-edits", "edit", {"path": "tests/x.py"}, "deny"),
        ("deny-asks", "edit", {"path": "src/a.py"}, "deny"),
        ("deny-asks", "read", {"path": "src/a.py"}, "allow"),
        ("bypass", "bash", {"command": "touch x"}, "allow"),
        ("bypass", "edit", {"path": "tests/x.py"}, "deny"),
    ],
)
def test_modes_change_only_what_an_ask_becomes(
    workspace: Path, mode: str, tool: str, arguments: dict[str, str], verdict: str
) -> None:
    spec = PermissionsSpec(default="ask", allow=("read",), deny=("edit(tests/**)",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace, mode=mode)  # type: ignore[arg-type]
    assert policy.decide(tool, arguments, None).verdict == verdict


def test_an_ask_nobody_answers_is_a_deny_the_model_can_read(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(PermissionsSpec(ask=("bash",)), workspace=workspace)
    decision = policy.decide("bash", {"command": "ls"}, None)
    assert decision.verdict == "ask"
    refused = decision.unanswered()
    assert (refused.verdict, refused.reason, refused.rule) == ("deny", NEEDS_APPROVAL, "bash")
    allowed = policy.decide("read", {"path": "x"}, None)
    assert allowed.unanswered() is allowed


def test_a_session_rule_allows_the_exact_call_and_nothing_else(workspace: Path) -> None:
    spec = PermissionsSpec(default="ask", allow=("bash(git status)",), deny=("bash(rm *)",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    arguments = {"command": "git status && pytest -q tests/test_fee.py"}
    assert policy.decide("bash", arguments, None).verdict == "ask"
    rules = policy.session_rules_for("bash", arguments, None)
    assert rules == ("bash(pytest -q tests/test_fee.py)",)
    session = policy
    for rule in rules:
        session = session.with_session_rule(rule)
    decision = session.decide("bash", arguments, None)
    assert decision.verdict == "allow"
    assert session.decide("bash", {"command": "pytest -q"}, None).verdict == "ask"
    assert (
        session.decide("bash", {"command": "pytest -q tests/test_fee.py; rm x"}, None).verdict
        == "deny"
    )
    assert policy.decide("bash", arguments, None).verdict == "ask"  # the original is unchanged
    assert session.describe()["session"] == ["bash(pytest -q tests/test_fee.py)"]
    assert session.describe()["allow"] == ["bash(git status)"]


def test_session_rules_quote_what_a_pattern_would_read_as_a_wildcard(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=workspace)
    command = "ls '*.py' \"a b\" '$HOME'"
    (rule,) = policy.session_rules_for("bash", {"command": command}, None)
    assert rule == "bash(ls '*.py' 'a b' '$HOME')"
    session = policy.with_session_rule(rule)
    assert session.decide("bash", {"command": command}, None).origin == "session"
    assert session.decide("bash", {"command": "ls x 'a b' '$HOME'"}, None).verdict == "ask"
    # `$HOME` unquoted is the home directory, not the text `$HOME`: the rule does not
    # allow it, and no rule names that call exactly, so none is offered (the session
    # rule used to read `$HOME` as literal text).
    assert session.decide("bash", {"command": "ls '*.py' 'a b' $HOME"}, None).verdict == "ask"
    assert policy.session_rules_for("bash", {"command": "ls $HOME"}, None) == ()
    (path_rule,) = policy.session_rules_for("edit", {"path": "src/[x]*.py"}, None)
    assert path_rule == "edit(src/[[]x][*].py)"
    assert (
        policy.with_session_rule(path_rule).decide("edit", {"path": "src/[x]*.py"}, None).verdict
        == "allow"
    )
    assert (
        policy.with_session_rule(path_rule).decide("edit", {"path": "src/x1.py"}, None).verdict
        == "ask"
    )


def test_no_session_rule_for_what_no_rule_can_allow(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=workspace)
    assert policy.session_rules_for("bash", {"command": "git status > x"}, None) == ()
    assert policy.session_rules_for("edit", {"path": "../x"}, None) == ()


def test_mcp_rules_match_server_and_tool(workspace: Path) -> None:
    issue = _tool("gh_create_issue", "mcp:github", {"type": "object"})
    clock = _tool("now", "mcp:time", {"type": "object"})
    spec = PermissionsSpec(
        default="allow", deny=("mcp:github/*",), ask=("mcp:time/now",), allow=("mcp:time",)
    )
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    assert policy.decide("gh_create_issue", {}, issue).rule == "mcp:github/*"
    assert policy.decide("gh_create_issue", {}, issue).verdict == "deny"
    assert policy.decide("now", {}, clock).verdict == "ask"
    # a built-in of the same name is not the server's tool
    assert policy.decide("gh_create_issue", {}, None).verdict == "allow"


def test_python_and_extension_tools_name_their_main_argument(workspace: Path) -> None:
    parameters = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "region": {"type": "string"}},
        "required": ["count", "region"],
    }
    quote = _tool("quote_fee", "python:tools.fees:quote_fee", parameters)
    named = _tool("deploy", "extension:ops", {"type": "object", "properties": {}}, main="target")
    spec = PermissionsSpec(
        default="ask", allow=("quote_fee(eu-*)", "deploy(staging)"), deny=("deploy(prod*)",)
    )
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    assert policy.decide("quote_fee", {"count": 1, "region": "eu-west"}, quote).verdict == "allow"
    assert policy.decide("quote_fee", {"count": 1, "region": "us/eu-x"}, quote).verdict == "ask"
    assert policy.decide("deploy", {"target": "staging"}, named).verdict == "allow"
    assert policy.decide("deploy", {"target": "production"}, named).verdict == "deny"
    # a tool without a main argument cannot be checked against a deny pattern
    bare = _tool("deploy", "extension:ops", {"type": "object"})
    assert policy.decide("deploy", {"target": "prod"}, bare).verdict == "ask"


def test_an_extension_tool_named_like_a_builtin_is_matched_as_text(workspace: Path) -> None:
    shell = _tool("bash", "extension:remote", {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]
    })  # fmt: skip
    spec = PermissionsSpec(default="ask", allow=("bash(git status)",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    assert policy.decide("bash", {"command": "git status"}, shell).verdict == "allow"
    assert policy.decide("bash", {"command": "git status; rm x"}, shell).verdict == "ask"


def test_malformed_rules_and_modes_are_errors(workspace: Path) -> None:
    with pytest.raises(PermissionRuleError, match="unclosed"):
        PermissionPolicy.from_spec(PermissionsSpec(allow=("bash('x)",)), workspace=workspace)
    with pytest.raises(PermissionRuleError, match="must end with"):
        PermissionPolicy.from_spec(PermissionsSpec(deny=("edit(src",)), workspace=workspace)
    with pytest.raises(PermissionRuleError, match="unknown permission mode"):
        PermissionPolicy.from_spec(None, workspace=workspace, mode="yolo")  # type: ignore[arg-type]
    policy = PermissionPolicy.from_spec(None, workspace=workspace)
    with pytest.raises(PermissionRuleError, match="empty pattern"):
        policy.with_session_rule("bash()")


def test_an_mcp_rule_never_names_a_builtin_tool_of_the_same_name(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="allow", deny=("mcp:*/bash",)), workspace=workspace
    )
    assert policy.decide("bash", {"command": "ls"}, None).verdict == "allow"


def _decide(workspace: Path, spec: PermissionsSpec, tool: str, arguments: dict[str, Any]) -> Any:
    return PermissionPolicy.from_spec(spec, workspace=workspace).decide(tool, arguments, None)


def test_the_reason_says_which_rule_decided_and_how(workspace: Path) -> None:
    spec = PermissionsSpec(
        default="ask", allow=("bash(git status)",), ask=("bash(git push *)",), deny=("bash(rm *)",)
    )
    reasons = [
        _decide(workspace, spec, "bash", {"command": c}).reason
        for c in ("git status", "git push", "rm x")
    ]
    assert reasons == [
        "allowed by `bash(git status)`",
        "needs approval under the rule `bash(git push *)`",
        "denied by the rule `bash(rm *)`",
    ]


def test_the_reason_says_which_deny_rule_an_unseen_command_cannot_be_checked_against(
    workspace: Path,
) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(rm -rf *)",))
    decision = _decide(workspace, spec, "bash", {"command": "rm $y"})
    assert decision.reason == (
        "cannot be checked against `bash(rm -rf *)`: "
        "`bash(rm -rf *)` may match once the line's expansions are known"
    )


def test_without_a_deny_or_ask_rule_an_unseen_command_follows_the_default(
    workspace: Path,
) -> None:
    spec = PermissionsSpec(default="allow", allow=("bash(git status)",))
    assert _decide(workspace, spec, "bash", {"command": 'eval "$x"'}).verdict == "allow"


def test_a_session_rule_for_a_directory_search_covers_the_tree(workspace: Path) -> None:
    (workspace / "src" / "deep").mkdir(parents=True, exist_ok=True)
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=workspace)
    rules = policy.session_rules_for("grep", {"path": "src", "pattern": "x"}, None)
    allowed = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=rules), workspace=workspace
    )
    verdicts = [
        allowed.decide("grep", {"path": p, "pattern": "x"}, None).verdict
        for p in ("src", "src/deep", ".")
    ]
    assert verdicts == ["allow", "allow", "ask"]


def test_an_ask_turned_into_a_deny_by_the_mode_says_the_mode_decided(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask"), workspace=workspace, mode="deny-asks"
    )
    decision = policy.decide("bash", {"command": "ls"}, None)
    assert (decision.verdict, decision.origin) == ("deny", "mode")


def test_an_ask_rule_that_an_expansion_may_match_is_asked(workspace: Path) -> None:
    spec = PermissionsSpec(default="allow", ask=("bash(rm -rf *)",))
    assert _decide(workspace, spec, "bash", {"command": "rm $y"}).verdict == "ask"


def test_the_reason_lists_three_rules_in_full(workspace: Path) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(a *)", "bash(b *)", "bash(c *)"))
    reason = _decide(workspace, spec, "bash", {"command": 'eval "$x"'}).reason
    assert reason.startswith("cannot be checked against `bash(a *)`, `bash(b *)`, `bash(c *)`: ")


def test_a_deny_rule_on_a_file_denies_a_search_of_the_directory_holding_it(
    workspace: Path,
) -> None:
    (workspace / "secrets").mkdir(exist_ok=True)
    (workspace / "secrets" / "key").write_text("k")
    spec = PermissionsSpec(default="allow", deny=("grep(secrets/key)",))
    decision = _decide(workspace, spec, "grep", {"path": "secrets", "pattern": "x"})
    assert decision.verdict == "deny"


def test_bypass_still_denies_what_cannot_be_checked_against_a_deny_rule(workspace: Path) -> None:
    spec = PermissionsSpec(default="ask", ask=("bash(git push *)",), deny=("bash(rm *)",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace, mode="bypass")
    decision = policy.decide("bash", {"command": 'eval "$x"'}, None)
    assert decision.verdict == "deny"
    assert decision.reason.startswith("cannot be checked against `bash(rm *)`: ")
    assert decision.reason.endswith("(permission mode `bypass` skips questions, not deny rules)")


def test_bypass_skips_an_ask_rule_it_cannot_check(workspace: Path) -> None:
    spec = PermissionsSpec(default="ask", ask=("bash(git push *)",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace, mode="bypass")
    assert policy.decide("bash", {"command": 'eval "$x"'}, None).verdict == "allow"
