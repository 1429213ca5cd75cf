"""Issue 20, item 13: "allow for the session" on a file tool allows exactly the path
that was approved, anchored at the workspace root: approving `write pre-commit` must
not allow `.git/hooks/pre-commit`, nor a `pre-commit` in any other folder.

Through the real gate and policy, with an approver that answers like a person who
picked "allow for this session" and records every question it was asked.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from assembler.manifest.model import PermissionsSpec
from assembler.messages import ToolCall
from assembler.permissions.gate import Approval, ApprovalRequest, PermissionGate
from assembler.permissions.policy import PermissionPolicy
from assembler.tools.builtin.files import WRITE_TOOL


def asked_for(workspace: Path, paths: list[str]) -> list[str]:
    """Run a `write` of each path through the gate; the paths a person was asked about."""
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "sub").mkdir()
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=workspace)
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> Approval:
        asked.append(request.call.arguments["path"] if request.call.arguments else "")
        return Approval("session")

    gate = PermissionGate(policy, approver)

    async def go() -> None:
        for number, path in enumerate(paths):
            call = ToolCall(f"c{number}", "write", {"path": path, "content": "x"})
            outcome = await gate.check(call, WRITE_TOOL)
            assert outcome.allowed

    asyncio.run(go())
    return asked


def test_a_session_allow_of_a_top_level_file_does_not_reach_into_folders(tmp_path: Path) -> None:
    asked = asked_for(tmp_path, ["pre-commit", ".git/hooks/pre-commit", "sub/pre-commit"])
    assert asked == ["pre-commit", ".git/hooks/pre-commit", "sub/pre-commit"]


def test_the_exact_path_approved_is_allowed_again_without_asking(tmp_path: Path) -> None:
    asked = asked_for(
        tmp_path, ["pre-commit", "./pre-commit", "sub/x", "sub/x", "sub/../pre-commit"]
    )
    assert asked == ["pre-commit", "sub/x"]


def test_the_rule_offered_names_the_anchored_path(tmp_path: Path) -> None:
    policy = PermissionPolicy.from_spec(PermissionsSpec(default="ask"), workspace=tmp_path)
    rules = policy.session_rules_for("write", {"path": "pre-commit", "content": ""}, WRITE_TOOL)
    assert rules == ("write(./pre-commit)",)
    widened = policy.with_session_rule(rules[0])
    assert widened.decide("write", {"path": "pre-commit"}, WRITE_TOOL).verdict == "allow"
    assert widened.decide("write", {"path": "a/pre-commit"}, WRITE_TOOL).verdict == "ask"
