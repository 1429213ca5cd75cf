"""Opening a session's agent, and the agent's log, without the SDK.

Both the early phase (`early`: `session/new` answered before the SDK is loaded) and
the SDK's router (`server`) open agents here, so they build, start and note the
same way: the agent is started (its MCP servers) before the answer, so a failure is
the request's error; an agent that fails to start is closed. What the editor says of
its surroundings (its folder, its MCP servers) does not change the agent, and is
noted on stderr, which editors keep as the agent's log.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assembler.text import one_line

if TYPE_CHECKING:
    from assembler.agent.agent import Agent


class Builder(Protocol):
    """Builds the agent of a new session (`session` None), of a recorded one (its id),
    or of a new session forked from entry `fork` of a recorded one."""

    def __call__(self, session: str | None, fork: str | None = None) -> Agent: ...


@dataclass(frozen=True)
class Opened:
    """An agent built and started for a session, and the session's id."""

    id: str
    agent: Agent


async def open_agent(build: Builder, reference: str | None, fork: str | None = None) -> Opened:
    """Build and start the agent of a new session (`reference` None), of a recorded
    one, or of a fork of entry `fork` of it; its id is the session file's (an `acp-`
    id without session files)."""
    agent = build(reference, fork)
    try:
        await agent.start()
    except BaseException:
        await agent.aclose()
        raise
    if agent.session is not None and (fork is not None or reference is None):
        return Opened(agent.session.id, agent)
    return Opened(reference or f"acp-{uuid.uuid4().hex}", agent)


def note_surroundings(workspace: Path, cwd: str, mcp_servers: Sequence[Any] | None) -> None:
    """Log what the editor asked for that the manifest decides instead."""
    if cwd and cwd != str(workspace):
        log(f"the editor's folder {cwd} is not the workspace; the agent works in {workspace}")
    if mcp_servers:
        names = ", ".join(str(_name(s)) for s in mcp_servers)
        log(f"the editor's MCP servers ({names}) are not added: the manifest declares the tools")


def _name(server: Any) -> object:
    return server.get("name", "?") if isinstance(server, dict) else getattr(server, "name", "?")


def log(message: str) -> None:
    print(f"assemble acp: {message}", file=sys.stderr, flush=True)


class _OneLine(logging.Formatter):
    """The SDK logs what it cannot handle (a malformed notification, a handler's bug)
    with `logging.exception`: one line in the agent's log, the exception's type and
    message without its traceback, as every other error of `assemble`
    (`ASSEMBLER_DEBUG=1` shows the traceback, as for the other commands)."""

    def format(self, record: logging.LogRecord) -> str:
        if os.environ.get("ASSEMBLER_DEBUG"):
            return "assemble acp: " + super().format(record)
        text = f"assemble acp: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f": {type(error).__name__}: {one_line(str(error), 300)}"
        return text


def log_in_one_line() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    logging.basicConfig(handlers=[handler], level=logging.WARNING, force=True)
