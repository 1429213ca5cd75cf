"""The manifest's `ask` rules, answered by the editor through
`session/request_permission`.

The permission gate hands over an `ApprovalRequest` (the call, why it asks, and the
rules "allow for the rest of the session" would add). The request's content holds
the whole call as text (every argument, every line, nothing cut: `call_text`; the
title is one short line), an edit's diff, and the reason. The editor is offered:

- `allow_once` ("Allow once") -> `Approval("once")`;
- `allow_always` ("Allow for this session: RULES") -> `Approval("session")`, offered
  only when the rules the gate would add (`session_rules`) will hold: there are some,
  and no `ask` rule of the manifest matched (an explicit `ask` still wins over a
  session's allow, so "always" would ask again). The rules hold for this session of
  this process, never written to the manifest: the manifest stays the contract;
- `reject_once` ("Deny") -> `Approval("deny")`. There is no `reject_always`: the gate
  remembers allows only, and an option that says "always" must keep its word.

A `cancelled` outcome (the editor cancelled the turn) is a deny. No answer within the
manifest's `limits.permission_timeout` is a deny too: the gate stops waiting and the
model reads why.
"""

from __future__ import annotations

from collections.abc import Callable

from acp import RequestError, text_block, tool_content
from acp.interfaces import Client
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from assembler.acp.updates import TurnUpdates
from assembler.permissions.call_text import call_text
from assembler.permissions.gate import Approval, ApprovalRequest

ALLOW_ONCE = "allow_once"
ALLOW_SESSION = "allow_always"
REJECT = "reject_once"


class EditorApprover:
    """The approver of one ACP session: asks `client` about each `ask`."""

    def __init__(
        self, client: Client, session_id: str, turn: Callable[[], TurnUpdates | None]
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.turn = turn

    async def __call__(self, request: ApprovalRequest) -> Approval:
        turn = self.turn()
        if turn is None:  # no prompt runs, so no call can be waiting: refuse, to be safe
            return Approval("deny", "no prompt is running", by="client")
        view = turn.view(request.call)
        shown = [
            tool_content(text_block(call_text(request.call))),
            *view.diff,
            tool_content(text_block(request.decision.reason)),
        ]
        try:
            response = await self.client.request_permission(
                session_id=self.session_id,
                tool_call=ToolCallUpdate(
                    tool_call_id=turn.call_id(request.call),
                    title=view.title,
                    kind=view.kind,
                    status="pending",
                    content=shown,
                    locations=list(view.locations) or None,
                    raw_input=dict(request.call.arguments or {}),
                ),
                options=options(request),
            )
        except (RequestError, ConnectionError) as e:  # the editor cannot ask, or is gone
            return Approval("deny", f"the editor could not ask: {e}", by="client")
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            return Approval("deny", "the editor cancelled the prompt", by="client")
        if outcome.option_id == ALLOW_ONCE:
            return Approval("once", by="client")
        if outcome.option_id == ALLOW_SESSION and lasting(request):
            return Approval("session", by="client")
        if outcome.option_id == REJECT:
            return Approval("deny", by="client")
        return Approval("deny", f"unknown option {outcome.option_id!r}", by="client")


def options(request: ApprovalRequest) -> list[PermissionOption]:
    """The choices offered for `request`, in the order an editor shows them."""
    offered = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
    if lasting(request):
        rules = ", ".join(request.session_rules)
        offered.append(
            PermissionOption(
                option_id=ALLOW_SESSION,
                name=f"Allow for this session: {rules}",
                kind="allow_always",
            )
        )
    offered.append(PermissionOption(option_id=REJECT, name="Deny", kind="reject_once"))
    return offered


def lasting(request: ApprovalRequest) -> bool:
    """Whether "allow for this session" would hold: the gate has rules to add, and the
    ask came from the default rather than an `ask` rule (`decision.rule`), which a
    session's allow does not override."""
    return bool(request.session_rules) and request.decision.rule is None
