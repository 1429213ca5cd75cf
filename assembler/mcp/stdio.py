"""The stdio transport: the server is a child process speaking on stdin/stdout.

The process gets a minimal environment (`assembler.mcp.environment`), so the agent's
provider keys and any other secret in the user's shell never reach a third-party
program, and its stderr goes to a `StderrTail`, whose last lines explain a failed
start or a crash.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import mcp_types as types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError as ProtocolError

from assembler.manifest.model import MCPServerSpec
from assembler.mcp.environment import server_environment
from assembler.mcp.errlog import StderrTail
from assembler.mcp.transport import Transport

if TYPE_CHECKING:
    from assembler.mcp.transport import Streams


class StdioTransport(Transport):
    """A server process started from `spec.command`, in `spec.cwd` or `workspace`.

    Closing the streams closes the server's stdin, then terminates its process group
    (the SDK's `stdio_client` does both).
    """

    lost_reason = "the server process exited or closed its output"

    def __init__(self, spec: MCPServerSpec, workspace: Path) -> None:
        super().__init__(spec)
        self.workspace = workspace
        self._stderr: StderrTail | None = None

    @property
    def cwd(self) -> Path:
        return Path(self.spec.cwd or self.workspace)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Streams]:
        spec = self.spec
        params = StdioServerParameters(
            command=spec.command or "",
            args=list(spec.args),
            env=server_environment(spec.env),
            cwd=str(self.cwd),
        )
        tail = self._stderr = StderrTail()
        try:
            async with stdio_client(params, errlog=tail.writer()) as streams:
                tail.release_writer()  # the child has its copy; EOF then means it exited
                yield streams
        finally:
            tail.release_writer()

    def describe(self) -> str:
        # Arguments are left out: `${VAR}` interpolation often puts tokens there.
        return f"command `{self.spec.command}`"

    def launch_problem(self) -> str | None:
        if not self.cwd.is_dir():
            return f"its working directory {self.cwd} does not exist"
        return None

    def start_error_cause(self, exc: BaseException) -> str | None:
        command = self.spec.command
        if isinstance(exc, FileNotFoundError):
            return f"command `{command}` not found (is it installed and on PATH?)"
        if isinstance(exc, PermissionError):
            return f"command `{command}` cannot be executed ({exc.strerror})"
        if isinstance(exc, ProtocolError) and exc.code == types.CONNECTION_CLOSED:
            return "the server exited (or closed its output) during initialisation"
        return None

    def stderr_tail(self, max_lines: int = 20) -> str:
        return self._stderr.tail(max_lines) if self._stderr is not None else ""

    async def settle(self) -> None:
        if self._stderr is not None:
            await self._stderr.settle()

    def release(self) -> None:
        if self._stderr is not None:
            self._stderr.release_writer()
