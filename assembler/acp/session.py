"""One ACP session: an agent that `build_agent` made, its prompt turns, and their
cancellation.

Prompt turns run one at a time. A `session/prompt` that arrives while another runs
waits for it (a queue, like `assemble rpc`): each request is one turn with its own
stop reason, which a client can rely on. Redirecting the running turn is the
`_assembler/steer` extension method (`agent.steer`: delivered after the running tool
calls, before the next model request).

`session/cancel` stops the running turn and every turn still waiting: the run is
cancelled (its tools stopped, command processes killed, sub-agents closed), calls it
had announced and not finished are ended as failed, and each turn answers with the
stop reason `cancelled`.

A prompt that is one of the advertised slash commands (`commands`) runs that command
as its turn instead, queued and cancelled the same way. The session's permission mode
(`modes`) is the agent's, switched between turns or during one: it decides the next
call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any

from acp import RequestError, update_agent_message_text, update_agent_thought_text
from acp.interfaces import Client
from acp.schema import ClientCapabilities, PromptResponse, SessionModeState, StopReason

from assembler.acp import commands
from assembler.acp.editor_files import EditorFiles, use_editor_files
from assembler.acp.modes import checked_mode, mode_state, mode_update
from assembler.acp.permissions import EditorApprover
from assembler.acp.plan import plan_update
from assembler.acp.updates import SessionUpdate, TurnUpdates, history_updates
from assembler.agent.agent import Agent
from assembler.agent.team import TeamMember
from assembler.errors import UsageError
from assembler.runner.events import RunEnd
from assembler.tools.base import Tool

Turn = Callable[[], Coroutine[Any, Any, PromptResponse]]

STOP_REASONS: dict[str, StopReason] = {
    "completed": "end_turn",
    "max_turns": "max_turn_requests",
    "blocked": "refusal",
    "cancelled": "cancelled",
    "budget": "max_tokens",
}
"""A run's end (`RunEnd.reason`) as the protocol's stop reason; `error` is none of
them and answers the request with an error instead. A budget stop is `max_tokens`
(the turn ended because it may spend no more), its message a thought chunk."""


class EditorSession:
    """The agent of one session and the turns that run on it."""

    def __init__(
        self,
        session_id: str,
        agent: Agent,
        client: Client,
        offered: ClientCapabilities | None = None,
    ) -> None:
        self.id = session_id
        self.agent = agent
        self.client = client
        self.workspace = agent.state().workspace
        self.turn: TurnUpdates | None = None
        self._turns = asyncio.Lock()
        self._tickets = 0  # turns received
        self._cancelled_before = 0  # turns received before the latest cancel
        self._running: asyncio.Task[PromptResponse] | None = None
        self._team = TeamWorkspaces(agent.team.member if agent.team is not None else None)
        agent.set_approver(
            EditorApprover(client, session_id, lambda: self.turn),
            timeout=agent.manifest.limits.permission_timeout,
        )
        fs = offered.fs if offered is not None else None
        self.editor_tools = use_editor_files(agent.registry, EditorFiles(client, session_id), fs)

    def tool(self, name: str) -> Tool | None:
        return self.agent.registry.get(name)

    async def replay(self) -> None:
        """Send the conversation so far (`session/load`)."""
        messages = self.agent.state().messages
        for update in history_updates(messages, self.tool, self.workspace):
            await self._send(update)

    @property
    def modes(self) -> SessionModeState:
        return mode_state(self.agent.state().permission_mode)

    async def set_mode(self, mode_id: str) -> None:
        """Switch the permission mode (`session/set_mode`) and say so."""
        self.agent.set_permission_mode(checked_mode(mode_id))
        await self._send(mode_update(mode_id))

    async def announce(self) -> None:
        """Tell the editor which slash commands this session runs, and the plan of a
        session that has one (resumed or loaded)."""
        await self._send(commands.available(self.agent))
        plan = self.agent.state().plan
        if plan:
            await self._send(plan_update(plan))

    async def prompt(self, text: str) -> PromptResponse:
        """Run one turn (after the turns before it) and say why it stopped: the
        command `text` names, or a turn of the model."""
        command = commands.invocation(text, self.agent)
        if command is not None:
            return await self._queued(lambda: self._command(command))
        return await self._queued(lambda: self._run(text))

    async def close(self) -> None:
        """Stop every turn and close the agent (`session/close`, the end of the
        connection)."""
        self.cancel()
        async with self._turns:  # the cancelled turns have answered
            await self.agent.aclose()

    async def _queued(self, turn: Turn) -> PromptResponse:
        ticket = self._tickets
        self._tickets += 1
        async with self._turns:
            if ticket < self._cancelled_before:
                return PromptResponse(stop_reason="cancelled")
            task = asyncio.create_task(turn())
            self._running = task
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:  # the connection is closing
                task.cancel()
                await asyncio.wait({task})
                raise
            finally:
                self._running = None
            if task.cancelled():
                if self.turn is not None:
                    for update in self.turn.close_open("cancelled"):
                        await self._send(update)
                return PromptResponse(stop_reason="cancelled")
            return task.result()

    def cancel(self) -> None:
        """Stop the running turn and every turn received so far."""
        self._cancelled_before = self._tickets
        if self._running is not None and not self._running.done():
            self._running.cancel()

    @property
    def busy(self) -> bool:
        """A turn is running."""
        return self._running is not None and not self._running.done()

    def steer(self, text: str) -> bool:
        """Deliver `text` to the running turn; False when none runs."""
        if self._running is None or self._running.done():
            return False
        self.agent.steer(text)
        return True

    async def _command(self, command: commands.Invocation) -> PromptResponse:
        self.turn = None  # a command asks no permission
        said = await commands.run(self.agent, command)
        if said:
            await self._send(update_agent_message_text(said))
        return PromptResponse(stop_reason="end_turn")

    async def _run(self, text: str) -> PromptResponse:
        turn = TurnUpdates(self.tool, self.workspace, self._team)
        self.turn = turn
        end: RunEnd | None = None
        events = self.agent.stream(text)
        try:
            async for event in events:
                if isinstance(event, RunEnd):
                    end = event
                    continue
                for update in turn.updates(event):
                    await self._send(update)
        finally:  # an async generator left open would finish at some random later time
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
        return await self._stopped(end)

    async def _stopped(self, end: RunEnd | None) -> PromptResponse:
        if end is None or end.reason not in STOP_REASONS:
            message = (end.message if end is not None else "") or "the run failed"
            raise RequestError(-32603, message, {"reason": end.reason if end else "error"})
        if end.message:  # why it stopped early: the user reads it, the model does not
            await self._send(update_agent_thought_text(end.message + "\n"))
        return PromptResponse(stop_reason=STOP_REASONS[end.reason])

    async def _send(self, update: SessionUpdate) -> None:
        await self.client.session_update(session_id=self.id, update=update)


class TeamWorkspaces(Mapping[str, Path]):
    """The workspace of each sub-agent by its path (`lead/reviewer`), looked up in the
    team tree when an event names it: a tree of many paths is never listed whole."""

    def __init__(self, member: TeamMember | None) -> None:
        self.member = member

    def __getitem__(self, path: str) -> Path:
        member = self.member
        if member is None or not path.startswith(member.path + "/"):
            raise KeyError(path)
        try:
            found = member.find(path.removeprefix(member.path + "/"))
        except UsageError:
            raise KeyError(path) from None
        return found.manifest.workspace.resolve()

    def __iter__(self) -> Iterator[str]:
        return iter(m.path for m in (self.member.unique() if self.member else ()))

    def __len__(self) -> int:
        return sum(1 for _ in self)
