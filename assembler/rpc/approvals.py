"""Permission asks over RPC: a `permission_request` event to the client, answered by
its `permission_reply` request.

The event goes out under the id of the prompt whose run asks (a sub-agent's asks
too: children share the parent's approver), with a `request_id` of its own:

    {"id": 7, "event": {"type": "permission_request", "request_id": "perm-1",
     "call_id": "call_1", "tool": "bash", "arguments": {"command": "git push"},
     "text": "bash: git push",
     "reason": "...", "rule": "bash(git push *)" | null, "rules": ["bash(git push)"]}}

`text` is the whole call as a person should read it before answering (every
argument, every line, nothing cut: `call_text`); show it in full. `rules` are what a `session` answer would allow for the rest of the session (empty:
only `once` or `deny`). The reply is `{"request_id": "perm-1", "choice": "once" |
"session" | "deny", "reason": "..."}`; no reply within `limits.permission_timeout`
seconds is a deny (the gate's timeout), and so is a cancelled prompt. A reply to a
request that is no longer waiting is an `InvalidParams` error, since the client must
learn that its answer did not count.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from assembler.permissions.call_text import call_text
from assembler.permissions.gate import Approval, ApprovalRequest, Choice
from assembler.rpc.errors import RpcError

CHOICES: dict[object, Choice] = {"once": "once", "session": "session", "deny": "deny"}


class RpcApprovals:
    """The `Approver` of an RPC session, and the requests waiting for their reply."""

    def __init__(self, send: Callable[[dict[str, Any]], None], prompt_id: Callable[[], Any]):
        self.send = send
        self.prompt_id = prompt_id
        self.pending: dict[str, tuple[ApprovalRequest, asyncio.Future[Approval]]] = {}
        self._numbers = itertools.count(1)

    async def __call__(self, request: ApprovalRequest) -> Approval:
        request_id = f"perm-{next(self._numbers)}"
        answer: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = (request, answer)
        call = request.call
        event: dict[str, Any] = {
            "type": "permission_request",
            "request_id": request_id,
            "call_id": call.id,
            "tool": call.name,
            "arguments": call.arguments,
            "text": call_text(call),
            "reason": request.decision.reason,
            "rule": request.decision.rule,
            "rules": list(request.session_rules),
        }
        if call.arguments is None:
            event["raw_arguments"] = call.raw_arguments
        try:
            self.send({"id": self.prompt_id(), "event": event})
            return await answer
        finally:  # answered, timed out or cancelled: a late reply is refused
            self.pending.pop(request_id, None)

    def reply(self, params: dict[str, Any]) -> dict[str, Any]:
        """Answer a waiting request (`permission_reply`)."""
        request_id = params.get("request_id")
        choice = params.get("choice")
        reason = params.get("reason", "")
        if not isinstance(request_id, str):
            raise RpcError("InvalidParams", "`request_id` must be a string")
        if choice not in CHOICES:
            raise RpcError("InvalidParams", "`choice` must be one of once, session, deny")
        if not isinstance(reason, str):
            raise RpcError("InvalidParams", "`reason` must be a string")
        waiting = self.pending.get(request_id)
        if waiting is None or waiting[1].done():
            raise RpcError(
                "InvalidParams",
                f"no permission request {request_id!r} is waiting (answered, timed out, "
                "or its prompt was cancelled)",
            )
        request, answer = waiting
        if choice == "session" and not request.session_rules:
            raise RpcError(
                "InvalidParams",
                f"{request_id} offers no rule for the session: answer once or deny",
            )
        answer.set_result(Approval(CHOICES[choice], reason, by="client"))
        return {"ok": True}

    def waiting(self) -> list[str]:
        return list(self.pending)
