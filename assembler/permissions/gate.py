"""The permission gate at run time: decide each call, ask about an `ask`, remember an
"allow for the rest of the session".

The gate runs before extensions' `tool_call` handlers; a deny from it, like a block
from an extension, means the call never runs (a block from either side wins). Who
answers an `ask` depends on the front end: the person at the terminal (`assemble
run`), the client (`assemble rpc`, ACP), or nobody (`-p`, no terminal, `--json`), and
then it is a deny the model can read. Asks are answered one at a time: after an
"allow for the session" the next waiting call is decided again with the new rule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from assembler.messages import ToolCall
from assembler.permissions.policy import NEEDS_APPROVAL, Decision, PermissionPolicy
from assembler.runner.hooks import PermissionOutcome
from assembler.tools.base import Tool

Choice = Literal["once", "session", "deny"]


@dataclass(frozen=True)
class ApprovalRequest:
    """An `ask`: the call, why it needs approval, and the rules "allow for the rest of
    the session" would add (empty: only "once" or "deny" can be offered)."""

    call: ToolCall
    decision: Decision
    session_rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Approval:
    """The answer: `once`, `session` (adds `ApprovalRequest.session_rules`), or `deny`
    with an optional reason the model sees. `by` names who answered (`user`, `client`)."""

    choice: Choice
    reason: str = ""
    by: str = "user"


Approver = Callable[[ApprovalRequest], Awaitable[Approval]]


class PermissionGate:
    """`PermissionCheck` over a `PermissionPolicy` and an optional approver."""

    def __init__(
        self,
        policy: PermissionPolicy,
        approver: Approver | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        self.policy = policy
        self.approver = approver
        self.timeout = timeout
        self._asking = asyncio.Lock()

    async def check(self, call: ToolCall, tool: Tool) -> PermissionOutcome:
        arguments = call.arguments or {}
        decision = self.policy.decide(call.name, arguments, tool)
        if decision.verdict != "ask":
            return _outcome(decision)
        if self.approver is None:
            return _outcome(decision.unanswered(), decided_by="nobody")
        async with self._asking:
            decision = self.policy.decide(call.name, arguments, tool)  # a rule may be new
            if decision.verdict != "ask":
                return _outcome(decision)
            # an explicit `ask` rule beats any allow, so "for the session" could not hold
            rules = (
                ()
                if decision.rule is not None
                else self.policy.session_rules_for(call.name, arguments, tool)
            )
            request = ApprovalRequest(call, decision, rules)
            try:
                answer = await asyncio.wait_for(self.approver(request), self.timeout)
            except TimeoutError:
                return PermissionOutcome(
                    False,
                    f"{NEEDS_APPROVAL} (no answer within {self.timeout:g} s)",
                    "nobody",
                    decision.rule,
                )
            return self._answered(request, answer)

    def _answered(self, request: ApprovalRequest, answer: Approval) -> PermissionOutcome:
        if answer.choice == "deny":
            why = f": {answer.reason}" if answer.reason.strip() else ""
            return PermissionOutcome(
                False, f"the {answer.by} refused this call{why}", answer.by, request.decision.rule
            )
        if answer.choice == "session":
            for rule in request.session_rules:
                self.policy = self.policy.with_session_rule(rule)
            shown = ", ".join(request.session_rules)
            return PermissionOutcome(
                True, f"the {answer.by} allowed it for this session ({shown})", answer.by, shown
            )
        return PermissionOutcome(True, f"the {answer.by} allowed it once", answer.by, None)


def _outcome(decision: Decision, decided_by: str | None = None) -> PermissionOutcome:
    by = decided_by or ("session rule" if decision.origin == "session" else decision.origin)
    return PermissionOutcome(decision.verdict == "allow", decision.reason, by, decision.rule)
