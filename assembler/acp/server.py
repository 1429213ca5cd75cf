"""The agent side of the Agent Client Protocol, on the official SDK's connection.

Each `session/new` builds a new agent with `build_agent` (a new session file), and
`session/load` and `session/resume` build one continuing a recorded session (`load`
replays its history first, `resume` does not); each starts the agent (its MCP servers)
before answering, so a failure (an untrusted directory, a missing API key, a server
that does not start) is the request's error, which the editor shows, never a crash.
`session/list` offers the recorded sessions (`listing`), `session/close` ends one.
Prompts, cancellation, modes and permission requests are per session
(`session.EditorSession`); once a session is open, the editor hears which slash
commands it runs (`commands`).

What the editor says about the session's surroundings does not change the agent: the
manifest's workspace is where it works, whatever `cwd` the editor names (the
workspace is bound at build time, and the manifest is what `render` shows and CI
validates), and the editor's own MCP servers are not added to the manifest's tools.
Both are noted on stderr, which editors keep as the agent's log.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp import Agent as ProtocolAgent
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionModeResponse,
)

from assembler.acp.content import Block, UnsupportedContent, prompt_text
from assembler.acp.listing import session_page
from assembler.acp.session import EditorSession
from assembler.acp.stdio import open_streams
from assembler.agent.agent import Agent
from assembler.errors import AssemblerError, SessionError
from assembler.protocol_stdio import ProtocolFiles
from assembler.sessions.store import SessionStore
from assembler.text import one_line
from assembler.version import __version__

Builder = Callable[[str | None], Agent]
"""Builds the agent of a new session (None) or of a recorded one (its id)."""

STEER = "assembler/steer"
"""The extension method `_assembler/steer` {sessionId, text}: redirect the running turn."""


class EditorServer:
    """The methods an editor calls; the SDK's router calls them with the request's
    fields, and answers a method this class lacks with "method not found"."""

    def __init__(
        self,
        build: Builder,
        *,
        name: str,
        store: SessionStore | None,
        workspace: Path,
    ) -> None:
        self.build = build
        self.name = name
        self.store = store  # None: no session files (--no-session)
        self.workspace = workspace
        self.sessions: dict[str, EditorSession] = {}
        self.client_capabilities = ClientCapabilities()
        self._client: Client | None = None
        self._background: set[asyncio.Task[None]] = set()

    @property
    def record_sessions(self) -> bool:
        return self.store is not None

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the connection has not started")
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client_capabilities = client_capabilities or ClientCapabilities()
        recorded = self.record_sessions
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=recorded,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities() if recorded else None,
                    resume=SessionResumeCapabilities() if recorded else None,
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(name="agent-assembler", title=self.name, version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session = await self._open(None, cwd, mcp_servers)
        self._after_answer(session.announce())
        return NewSessionResponse(session_id=session.id, modes=session.modes)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        self._recorded("loaded")
        session = self.sessions.get(session_id) or await self._open(session_id, cwd, mcp_servers)
        await session.replay()
        self._after_answer(session.announce())
        return LoadSessionResponse(modes=session.modes)

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        self._recorded("resumed")
        session = self.sessions.get(session_id) or await self._open(session_id, cwd, mcp_servers)
        self._after_answer(session.announce())
        return ResumeSessionResponse(modes=session.modes)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if self.store is None:
            return ListSessionsResponse(sessions=[])
        with _answered():
            return session_page(
                self.store, agent=self.name, workspace=self.workspace, cursor=cursor
            )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        session = self._session(session_id)
        del self.sessions[session_id]
        await session.close()
        return CloseSessionResponse()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        await self._session(session_id).set_mode(mode_id)
        return SetSessionModeResponse()

    async def prompt(self, prompt: list[Block], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        try:
            text = prompt_text(prompt, session.workspace)
        except UnsupportedContent as e:
            raise RequestError(-32602, str(e)) from e
        if not text.strip():
            raise RequestError(-32602, "the prompt is empty")
        with _answered():
            return await session.prompt(text)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != STEER:
            raise RequestError.method_not_found(f"_{method}")
        session_id, text = params.get("sessionId"), params.get("text")
        if not isinstance(session_id, str) or not isinstance(text, str) or not text.strip():
            raise RequestError(-32602, "`_assembler/steer` takes a sessionId and a non-empty text")
        return {"steered": self._session(session_id).steer(text)}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        """Stop every session's turns and close its agent (servers, session files)."""
        for task in list(self._background):
            task.cancel()
        for session in list(self.sessions.values()):
            session.cancel()
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception as e:  # one agent failing to close must not keep others open
                _log(f"closing session {session.id} failed: {type(e).__name__}: {e}")
        self.sessions.clear()

    def _recorded(self, verb: str) -> None:
        if self.store is None:
            raise RequestError(
                -32601, f"this agent records no sessions (--no-session), so none can be {verb}"
            )

    def _after_answer(self, notification: Coroutine[Any, Any, None]) -> None:
        """Send `notification` once the request is answered: the SDK queues the answer
        as soon as the handler returns, before a task made here gets to run, so the
        editor knows the session before it hears about it."""
        task = asyncio.get_running_loop().create_task(_logged(notification))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _open(
        self, reference: str | None, cwd: str, mcp_servers: list[Any] | None
    ) -> EditorSession:
        with _answered(missing_session=reference is not None):
            agent = self.build(reference)
            try:
                await agent.start()
            except BaseException:
                await agent.aclose()
                raise
        session_id = reference or (agent.session.id if agent.session else f"acp-{uuid.uuid4().hex}")
        session = EditorSession(session_id, agent, self.client, self.client_capabilities)
        self.sessions[session_id] = session
        if session.editor_tools:
            _log(f"the editor reads and writes files for {', '.join(session.editor_tools)}")
        if cwd and cwd != str(session.workspace):
            _log(
                f"the editor's folder {cwd} is not the workspace; the agent works in {session.workspace}"
            )
        if mcp_servers:
            names = ", ".join(str(getattr(s, "name", "?")) for s in mcp_servers)
            _log(
                f"the editor's MCP servers ({names}) are not added: the manifest declares the tools"
            )
        return session

    def _session(self, session_id: str) -> EditorSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(-32602, f"no session {session_id!r}; create one with session/new")
        return session


@contextmanager
def _answered(*, missing_session: bool = False) -> Iterator[None]:
    """Our own errors become the request's error, with their one readable message (and
    on stderr, the agent's log); anything else is a bug the SDK reports as an
    internal error (and logs: `_OneLine`)."""
    try:
        yield
    except AssemblerError as e:
        _log(f"error: {e}")
        code = -32002 if missing_session and isinstance(e, SessionError) else -32603
        raise RequestError(code, str(e), {"type": type(e).__name__}) from e


async def _logged(notification: Coroutine[Any, Any, None]) -> None:
    try:
        await notification
    except (RequestError, ConnectionError) as e:  # the editor is gone: nothing to tell
        _log(f"a notification was not sent: {e}")


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


def _log_in_one_line() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    logging.basicConfig(handlers=[handler], level=logging.WARNING, force=True)


def _log(message: str) -> None:
    print(f"assemble acp: {message}", file=sys.stderr, flush=True)


async def serve(
    build: Builder,
    files: ProtocolFiles,
    *,
    name: str,
    store: SessionStore | None,
    workspace: Path,
) -> None:
    """Serve the protocol on `files` until the editor closes its end; then stop every
    turn and close every agent."""
    _log_in_one_line()
    reader, writer = await open_streams(files)
    server = EditorServer(build, name=name, store=store, workspace=workspace)
    try:
        # The router calls only the methods the class defines; the rest of the
        # protocol's `Agent` interface is answered with "method not found".
        # `session/resume` and `session/close` are stable in protocol 1.x; the SDK
        # still routes them only with its "unstable" switch.
        await run_agent(cast(ProtocolAgent, server), writer, reader, use_unstable_protocol=True)
    finally:
        await server.aclose()
