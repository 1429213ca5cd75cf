"""What the RPC methods do with the agent: each takes the request's `params` object
and returns the `result` (the protocol itself, ordering and cancelling, is the
server's).

Served in order, after the prompt before them: `system_prompt`, `tools`, `messages`,
`reload`, `compact`, `fork`, `sessions`, `switch_session`, `new_session`. Answered
the moment they are read, also while a prompt runs: `steer`, `follow_up` (and, in
the server, `state`, `permission_reply` and `cancel`).
"""

from __future__ import annotations

from typing import Any

from assembler.agent.agent import Agent
from assembler.errors import SessionError
from assembler.messages import Usage
from assembler.rpc.errors import RpcError
from assembler.sessions.catalog import list_sessions
from assembler.sessions.codec import message_to_dict, usage_to_dict
from assembler.sessions.store import Session, SessionStore


def text_param(params: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise RpcError("InvalidParams", f"`{name}` must be a non-empty string")
    return value


def session_info(session: Session | None) -> dict[str, Any]:
    if session is None:
        return {"session_id": None, "session_file": None}
    info: dict[str, Any] = {"session_id": session.id, "session_file": str(session.path)}
    if session.header.get("parent_session"):
        info["parent_session"] = session.header["parent_session"]
        info["forked_from"] = session.header.get("forked_from")
    return info


def usage_dict(usage: Usage) -> dict[str, int]:
    return {**usage_to_dict(usage), "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens}  # fmt: skip


class AgentMethods:
    """The methods that read or change the agent."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    # -- served in order -------------------------------------------------------------

    async def system_prompt(self, params: dict[str, Any]) -> Any:
        return {"text": self.agent.system_prompt()}

    async def tools(self, params: dict[str, Any]) -> Any:
        return [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in self.agent.registry.schemas()
        ]

    async def messages(self, params: dict[str, Any]) -> Any:
        """The conversation the next request continues; with a session, each message
        also names its session entry (`entry_id`, what `fork` takes; null for a
        message the file does not hold, such as an "interrupted" result)."""
        state = self.agent.state()
        if state.entry_ids is None:
            return [message_to_dict(m) for m in state.messages]
        return [
            {**message_to_dict(m), "entry_id": entry}
            for m, entry in zip(state.messages, state.entry_ids, strict=True)
        ]

    async def reload(self, params: dict[str, Any]) -> Any:
        # code changed since trust was decided reloads only with `"trust": true`
        snapshot = self.agent.reload(trust=True if params.get("trust") is True else None)
        return {
            "skills": [s.name for s in snapshot.skills],
            "context_files": [f.path for f in snapshot.context_files],
            "tools": list(self.agent.registry.names()),
            "diagnostics": [d.format() for d in snapshot.diagnostics],
        }

    async def compact(self, params: dict[str, Any]) -> Any:
        done = await self.agent.compact(text_param(params, "instructions", required=False))
        if done is None:
            return {"compacted": False, "reason": "nothing is older than the last user message"}
        return {"compacted": True, "compaction": done.to_dict()}

    async def fork(self, params: dict[str, Any]) -> Any:
        entry = text_param(params, "entry_id")
        assert entry is not None
        session = self.agent.session
        if session is None:
            raise SessionError("this agent records no session (--no-session): nothing to fork")
        ids = list(dict.fromkeys(e.id for e in session.entries()))
        matches = [i for i in ids if i.startswith(entry)]
        if entry not in ids and len(matches) != 1:
            what = "no entry" if not matches else f"{len(matches)} entries match"
            raise RpcError("InvalidParams", f"session {session.id}: {what} {entry!r}")
        forked = self.agent.fork(entry if entry in ids else matches[0])
        return {**session_info(forked), "messages": len(self.agent.messages)}

    async def sessions(self, params: dict[str, Any]) -> Any:
        """This agent's sessions (in its session directory), most recent first."""
        limit = params.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                                  or limit < 1):  # fmt: skip
            raise RpcError("InvalidParams", "`limit` must be a positive integer")
        current = self.agent.session
        directory = (
            current.path.parent
            if current is not None
            else SessionStore.for_agent(self.agent.name).directory
        )
        found = list_sessions([directory], agent=self.agent.name, limit=limit)
        return [s.to_dict() for s in found]

    async def switch_session(self, params: dict[str, Any]) -> Any:
        reference = text_param(params, "session")
        assert reference is not None
        session = self.agent.switch_session(reference)
        return {**session_info(session), "messages": len(self.agent.messages)}

    async def new_session(self, params: dict[str, Any]) -> Any:
        return session_info(self.agent.new_session())

    # -- answered at once --------------------------------------------------------------

    def steer(self, params: dict[str, Any]) -> Any:
        text = text_param(params, "text")
        assert text is not None
        self.agent.steer(text)
        return {"queued": True, "streaming": self.agent.streaming}

    def follow_up(self, params: dict[str, Any]) -> Any:
        text = text_param(params, "text")
        assert text is not None
        self.agent.follow_up(text)
        return {"queued": True, "streaming": self.agent.streaming}

    def state(self) -> dict[str, Any]:
        state = self.agent.state()
        return {
            **session_info(state.session),
            "status": "streaming" if state.streaming else "idle",
            "queued": {"steers": list(state.steers), "follow_ups": list(state.follow_ups)},
            "usage": usage_dict(state.usage),
            "cost_usd": None if state.cost_usd is None else round(state.cost_usd, 6),
            "context": {"tokens": state.context_tokens, "window": state.context_window},
            "permission_mode": state.permission_mode,
            "plan": [item.to_dict() for item in state.plan],
        }
