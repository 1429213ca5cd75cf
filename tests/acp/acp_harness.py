"""The editor's side of ACP for tests: the official SDK's client, driving a real
`assemble acp` subprocess, recording every notification it gets.

(No `__init__.py` in this folder: a package named `acp` here would hide the SDK.)
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CurrentModeUpdate,
    DeniedOutcome,
    PermissionOption,
    PromptResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
    WriteTextFileResponse,
)
from procs import live_processes_with

SESSION_LEVEL = (AvailableCommandsUpdate, CurrentModeUpdate)


@dataclass
class Asked:
    """One `session/request_permission` the agent sent."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]


@dataclass
class Editor:
    """A client that records updates and answers permission requests with `answer`:
    an option id to pick, `cancelled`, or `never` (it does not answer at all)."""

    answer: str = "allow_once"
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[Asked] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    capabilities: ClientCapabilities | None = None
    """What `Running.start` offers in `initialize` (None: nothing)."""
    buffers: dict[str, str] = field(default_factory=dict)
    """Open buffers by absolute path: `fs/read_text_file` reads them (else the disk),
    `fs/write_text_file` writes them (never the disk), as an editor with unsaved work."""
    file_requests: list[tuple[str, str]] = field(default_factory=list)
    """Each `fs/*` request: ("read" or "write", path)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append(Asked(session_id, tool_call, options))
        self.changed.set()
        if self.answer == "never":
            await asyncio.Event().wait()
        if self.answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        self.file_requests.append(("read", path))
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except OSError as e:
            raise RequestError(-32002, f"cannot open {path}: {e.strerror}") from e

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.file_requests.append(("write", path))
        self.buffers[path] = content
        return WriteTextFileResponse()

    # -- reading what arrived ---------------------------------------------------

    def of(self, session_id: str) -> list[Any]:
        """The updates of turns and history (what the conversation shows), in order;
        the session's own (`announced`) are apart: they arrive at their own time."""
        return [
            update
            for sid, update in self.updates
            if sid == session_id and not isinstance(update, SESSION_LEVEL)
        ]

    def announced(self, session_id: str) -> list[Any]:
        """The session's own updates: its commands, its mode."""
        return [
            update
            for sid, update in self.updates
            if sid == session_id and isinstance(update, SESSION_LEVEL)
        ]

    def text(self, session_id: str) -> str:
        """The agent's message chunks, joined."""
        return "".join(
            u.content.text for u in self.of(session_id) if isinstance(u, AgentMessageChunk)
        )

    def thoughts(self, session_id: str) -> str:
        return "".join(
            u.content.text for u in self.of(session_id) if isinstance(u, AgentThoughtChunk)
        )

    def user_text(self, session_id: str) -> list[str]:
        return [u.content.text for u in self.of(session_id) if isinstance(u, UserMessageChunk)]

    def starts(self, session_id: str) -> list[ToolCallStart]:
        return [u for u in self.of(session_id) if isinstance(u, ToolCallStart)]

    def progress(self, session_id: str) -> list[ToolCallProgress]:
        return [u for u in self.of(session_id) if isinstance(u, ToolCallProgress)]

    async def until(self, condition: Any, what: str) -> None:
        """Wait until `condition()` holds (a guard of 60 s against hanging)."""
        try:
            async with asyncio.timeout(60):
                while not condition():
                    self.changed.clear()
                    if condition():
                        return
                    await self.changed.wait()
        except TimeoutError:
            raise AssertionError(f"waited 60 s for {what}") from None


@dataclass
class Running:
    """An `assemble acp` process and the connection to it."""

    conn: ClientSideConnection
    editor: Editor
    stderr: Path

    async def start(self, cwd: Path | str = "/") -> str:
        """`initialize`, then `session/new`: the new session's id."""
        await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=self.editor.capabilities
        )
        created = await self.conn.new_session(cwd=str(cwd), mcp_servers=[])
        return created.session_id

    async def prompt(self, session_id: str, text: str) -> PromptResponse:
        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")


@asynccontextmanager
async def serving(
    manifest: Path,
    *args: str,
    editor: Editor | None = None,
    cwd: Path | None = None,
    trust: bool = True,
) -> AsyncIterator[Running]:
    """`assemble acp MANIFEST ARGS...` with the SDK's client connected to it; on exit
    stdin is closed and the process must end by itself. `trust`: pass `--trust`, since
    the tests' replays call tools (a replay that calls tools is project code)."""
    client = editor or Editor()
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "stderr.txt"
        with log.open("wb") as stderr:
            async with spawn_agent_process(
                client,
                sys.executable, "-m", "assembler", "acp", str(manifest), *args,
                *(["--trust"] if trust and "--trust" not in args else []),
                env=dict(os.environ),
                cwd=cwd,
                transport_kwargs={"stderr": stderr, "shutdown_timeout": 30.0},
            ) as (conn, process):  # fmt: skip
                yield Running(conn, client, log)
            assert process.returncode == 0, log.read_text(errors="replace")


async def wait_for_process(marker: str) -> None:
    async with asyncio.timeout(30):
        while not live_processes_with(marker):
            await asyncio.sleep(0.05)


def manifest(
    root: Path,
    script: str,
    *,
    extra: str = "",
    files: Sequence[tuple[str, str]] = (),
) -> Path:
    """An agent in `root/agent.yaml` with every built-in tool, a scripted model
    (`script`, YAML steps) and a workspace `root/work` holding `files`."""
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    for name, text in files:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    (root / "script.yaml").write_text(script)
    path = root / "agent.yaml"
    path.write_text(
        "version: 1\nname: helper\nidentity: You help.\nmodel: scripted:script.yaml\n"
        "workspace: work\ntools:\n  sets:\n    - builtin: all\n" + extra
    )
    return path
