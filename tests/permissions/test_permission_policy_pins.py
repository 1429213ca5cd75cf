"""Pins for the decision (`permissions/policy.py`): the words and origin of each kind
of decision (what the person, the model and the audit trace read), the modes once
switched, `bypass` against a deny rule an expansion may match, the session rule an
MCP tool gets, a workspace that cannot be resolved.

Each was a mutant of `policy.py` no test noticed (issue 28, round 7).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.errors import PermissionRuleError
from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.permissions.policy import Decision
from assembler.tools.base import Tool, ToolContext, ToolResult


def policy(workspace: Path, **spec: Any) -> PermissionPolicy:
    return PermissionPolicy.from_spec(PermissionsSpec(**spec), workspace=workspace)


def bash(p: PermissionPolicy, command: str) -> Decision:
    return p.decide("bash", {"command": command}, None)


def outcome(decision: Decision) -> tuple[str, str, str | None, str]:
    return (decision.verdict, decision.reason, decision.rule, decision.origin)


def test_the_refusal_the_model_reads_when_nobody_can_answer(tmp_path: Path) -> None:
    refused = bash(policy(tmp_path, ask=("bash",)), "ls").unanswered()
    assert refused.reason == "needs approval: rerun interactively or add an allow rule"


def test_each_mode_says_it_decided(tmp_path: Path) -> None:
    base = policy(tmp_path, default="ask", deny=("bash(rm -rf *)",))
    assert outcome(bash(base.with_mode("bypass"), "ls")) == (
        "allow", "allowed by the permission mode `bypass`", None, "mode",
    )  # fmt: skip
    assert outcome(bash(base.with_mode("deny-asks"), "ls")) == (
        "deny",
        "needs approval: rerun interactively or add an allow rule (permission mode `deny-asks`)",
        None,
        "mode",
    )
    edit = base.with_mode("accept-edits").decide("edit", {"path": "a.py"}, None)
    assert outcome(edit) == (
        "allow", "a file edit inside the workspace (permission mode `accept-edits`)", None, "mode",
    )  # fmt: skip
    assert bash(base.with_mode("default"), "ls").verdict == "ask"


def test_bypass_denies_what_a_deny_rule_may_match_once_expansions_are_known(
    tmp_path: Path,
) -> None:
    """`bypass` skips questions, not deny rules: `rm $x` may be `rm -rf /`."""
    bypass = policy(tmp_path, default="ask", deny=("bash(rm -rf *)",)).with_mode("bypass")
    decision = bash(bypass, "rm $x")
    assert (decision.verdict, decision.rule, decision.origin) == ("deny", None, "mode")
    assert decision.reason == (
        "cannot be checked against `bash(rm -rf *)`: `bash(rm -rf *)` may match once the "
        "line's expansions are known (permission mode `bypass` skips questions, not deny rules)"
    )
    assert bash(bypass, "ls -la").verdict == "allow"  # nothing a deny rule could match


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PermissionRuleError, match="unknown permission mode `yolo`"):
        policy(tmp_path).with_mode("yolo")  # type: ignore[arg-type]


def test_describe_lists_the_default_and_the_mode(tmp_path: Path) -> None:
    described = policy(tmp_path, default="deny", allow=("read",)).with_mode("bypass").describe()
    assert (described["default"], described["mode"], described["allow"]) == (
        "deny", "bypass", ["read"],
    )  # fmt: skip


def test_the_default_says_it_decided(tmp_path: Path) -> None:
    asks = policy(tmp_path, default="ask", allow=("read",))
    assert outcome(bash(asks, "ls")) == (
        "ask", "no rule matches; the default is ask", None, "default",
    )  # fmt: skip
    denies = policy(tmp_path, default="deny", allow=("read",))
    assert outcome(bash(denies, "ls")) == (
        "deny", "no allow rule matches and the default is deny", None, "default",
    )  # fmt: skip


def test_a_line_allowed_by_several_rules_names_each_once(tmp_path: Path) -> None:
    p = policy(tmp_path, default="ask", allow=("bash(git status)", "bash(ls)"))
    decision = bash(p, "git status && ls && git status")
    assert (decision.rule, decision.reason) == (
        "bash(git status), bash(ls)",
        "allowed by `bash(git status), bash(ls)`",
    )


def test_a_bare_allow_is_named_alone(tmp_path: Path) -> None:
    decision = bash(policy(tmp_path, default="ask", allow=("bash", "b*")), "ls")
    assert (decision.verdict, decision.rule) == ("allow", "bash")


DENIES = ("bash(rm *)", "bash(mv *)", "bash(cp *)", "bash(dd *)", "bash(shred *)")


def test_an_ask_names_three_guards_and_counts_the_rest(tmp_path: Path) -> None:
    p = policy(tmp_path, default="allow", deny=DENIES)
    decision = bash(p, 'eval "$a"; bash -c "$b"')
    assert outcome(decision) == (
        "ask",
        "cannot be checked against `bash(rm *)`, `bash(mv *)`, `bash(cp *)` and 2 more: "
        "part of the command is not visible to the parser (`eval` runs a string as shell "
        "code; `bash` runs a command string)",
        None,
        "rule",
    )
    assert bash(p, 'bash "$s"').reason.endswith(
        "part of the command is not visible to the parser (part of it runs unseen)"
    )
    three = bash(policy(tmp_path, default="allow", deny=DENIES[:3]), 'eval "$a"')
    assert three.reason.startswith(
        "cannot be checked against `bash(rm *)`, `bash(mv *)`, `bash(cp *)`: "
    )
    four = bash(policy(tmp_path, default="allow", deny=DENIES[:4]), 'eval "$a"')
    assert "`bash(cp *)` and 1 more: " in four.reason


def test_a_line_no_rule_can_allow_names_its_first_three_problems(tmp_path: Path) -> None:
    p = policy(tmp_path, default="ask", allow=("bash(git status)",))
    line = 'eval "$a"; bash -c "$b"; source x; alias y=z'
    assert bash(p, line).reason == (
        "no rule can allow this line (`eval` runs a string as shell code; `bash` runs a "
        "command string; `source` changes what later commands run); the default is ask"
    )


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


def test_the_session_rule_for_an_mcp_tool_is_its_bare_name(tmp_path: Path) -> None:
    """A rule on an MCP tool's argument is not offered: the answer covers the tool."""
    p = policy(tmp_path, default="ask")
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    fetch = Tool("fetch", "d", parameters, _noop, source="mcp:web")
    assert p.session_rules_for("fetch", {"path": "a.txt"}, fetch) == ("fetch",)
    builtin = Tool("todo", "d", {"type": "object", "properties": {}}, _noop, source="builtin")
    assert p.session_rules_for("todo", {}, builtin) == ("todo",)


def test_a_workspace_that_cannot_be_resolved_never_allows_a_guarded_path(
    tmp_path: Path,
) -> None:
    """Without the workspace's real path no path can be checked against `edit(tests/**)`:
    under `default: allow` the edit is asked about, never allowed."""
    p = policy(tmp_path / "gone", default="allow", deny=("edit(tests/**)",))
    decision = p.decide("edit", {"path": "tests/x.py"}, None)
    assert decision.verdict == "ask"
    assert decision.reason.startswith("cannot be checked against `edit(tests/**)`: ")
