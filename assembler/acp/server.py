"""The agent side of the Agent Client Protocol, on the official SDK's connection.

Each `session/new` builds a new agent with `build_agent` (a new session file), and
`session/load` and `session/resume` build one continuing a recorded session (`load`
replays its history first, `resume` does not); each starts the agent (its MCP servers)
before answering (`opening`), so a failure (an untrusted directory, a missing API key,
a server that does not start) is the request's error, which the editor shows, never a
crash. The connection's first `initialize` and `session/new` may have been answered
before the SDK was loaded (`early`, `start`): the server takes over their sessions.
`session/list` offers the recorded sessions (`listing`), `session/close` ends one,
`session/fork` starts a new session file from where a recorded one stands.
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
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from acp import Agent as ProtocolAgent
from acp import RequestError, run_agent
from acp.interfaces import Client
from acp.schema import (
    ClientCapabilities,
    CloseSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SetSessionModeResponse,
)

from assembler.acp.answers import initialize_result, new_session_result
from assembler.acp.content import Block, UnsupportedContent, prompt_text
from assembler.acp.early import EarlyPhase
from assembler.acp.listing import session_page
from assembler.acp.opening import Builder, Opened, log, note_surroundings, open_agent
from assembler.acp.session import EditorSession
from assembler.errors import AssemblerError, SessionError
from assembler.sessions.store import SessionStore

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
        self.early: EarlyPhase | None = None
        """The requests answered before the SDK was loaded: their sessions are adopted
        once the connection exists (`on_connect`)."""

    @property
    def record_sessions(self) -> bool:
        return self.store is not None

    def on_connect(self, conn: Client) -> None:
        """The SDK's connection exists (it reads nothing yet): take over the editor's
        capabilities and the sessions the early phase opened, and announce them."""
        self._client = conn
        early, self.early = self.early, None
        if early is None:
            return
        if early.capabilities is not None:
            self.client_capabilities = ClientCapabilities.model_validate(early.capabilities)
        for opened in early.opened:
            self._after_answer(self._adopt(opened).announce())
        early.opened.clear()

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
    ) -> dict[str, Any]:
        self.client_capabilities = client_capabilities or ClientCapabilities()
        return initialize_result(recorded=self.record_sessions, title=self.name)

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        session = await self._open(None, cwd, mcp_servers)
        self._after_answer(session.announce())
        return new_session_result(session.id, session.agent.state().permission_mode)

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

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """A new session (its own file) continuing from where `session_id` stands now;
        the original is not changed. Refused while a turn of it runs here."""
        self._recorded("forked")
        assert self.store is not None
        running = self.sessions.get(session_id)
        if running is not None and running.busy:
            raise RequestError(-32602, f"session {session_id} is running a turn; fork it after")
        with _answered(missing_session=True):
            leaf = self.store.open(session_id).leaf
        if leaf is None:
            raise RequestError(-32602, f"session {session_id} has nothing to fork yet")
        session = await self._open(session_id, cwd, mcp_servers, fork=leaf)
        self._after_answer(session.announce())
        return new_session_result(session.id, session.agent.state().permission_mode)

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
        if self.early is not None:  # never connected: its sessions were not taken over
            await self.early.aclose()
        for task in list(self._background):
            task.cancel()
        for session in list(self.sessions.values()):
            session.cancel()
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception as e:  # one agent failing to close must not keep others open
                log(f"closing session {session.id} failed: {type(e).__name__}: {e}")
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
        self,
        reference: str | None,
        cwd: str,
        mcp_servers: list[Any] | None,
        *,
        fork: str | None = None,
    ) -> EditorSession:
        with _answered(missing_session=reference is not None):
            opened = await open_agent(self.build, reference, fork)
        session = self._adopt(opened)
        note_surroundings(session.workspace, cwd, mcp_servers)
        return session

    def _adopt(self, opened: Opened) -> EditorSession:
        session = EditorSession(opened.id, opened.agent, self.client, self.client_capabilities)
        self.sessions[opened.id] = session
        if session.editor_tools:
            log(f"the editor reads and writes files for {', '.join(session.editor_tools)}")
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
        log(f"error: {e}")
        code = -32002 if missing_session and isinstance(e, SessionError) else -32603
        raise RequestError(code, str(e), {"type": type(e).__name__}) from e


async def _logged(notification: Coroutine[Any, Any, None]) -> None:
    try:
        await notification
    except (RequestError, ConnectionError) as e:  # the editor is gone: nothing to tell
        log(f"a notification was not sent: {e}")


async def run_server(
    build: Builder,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    name: str,
    store: SessionStore | None,
    workspace: Path,
    early: EarlyPhase | None = None,
) -> None:
    """Serve the protocol with the SDK's connection until the editor closes its end,
    taking over from `early`; then stop every turn and close every agent."""
    server = EditorServer(build, name=name, store=store, workspace=workspace)
    server.early = early
    try:
        # The router calls only the methods the class defines; the rest of the
        # protocol's `Agent` interface is answered with "method not found".
        # `session/resume` and `session/close` are stable in protocol 1.x; the SDK
        # still routes them (and `session/fork`) only with its "unstable" switch.
        await run_agent(cast(ProtocolAgent, server), writer, reader, use_unstable_protocol=True)
    finally:
        await server.aclose()
