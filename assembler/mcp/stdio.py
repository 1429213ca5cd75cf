"""The stdio transport: the server is a child process speaking on stdin/stdout.

The process gets a minimal environment (`assembler.mcp.environment`), so the agent's
provider keys and any other secret in the user's shell never reach a third-party
program, and its stderr goes to a `StderrTail`, whose last lines explain a failed
start or a crash.

It runs confined: by the server's own `sandbox:` when it declares one (many servers
need the network), else by the agent's. The SDK starts the process, so the command
is wrapped (`python -I -S assembler/sandbox/confine.py POLICY -- COMMAND ARGS`): the
wrapper confines itself, then execs the server, which inherits it.
"""

from __future__ import annotations

import sys
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
from assembler.sandbox import confine
from assembler.sandbox.runtime import Sandbox

if TYPE_CHECKING:
    from assembler.mcp.transport import Streams


class StdioTransport(Transport):
    """A server process started from `spec.command`, in `spec.cwd` or `workspace`.

    Closing the streams closes the server's stdin, then terminates its process group
    (the SDK's `stdio_client` does both).
    """

    lost_reason = "the server process exited or closed its output"

    def __init__(
        self, spec: MCPServerSpec, workspace: Path, sandbox: Sandbox | None = None
    ) -> None:
        super().__init__(spec)
        self.workspace = workspace
        self.sandbox = sandbox
        self._stderr: StderrTail | None = None

    @property
    def cwd(self) -> Path:
        return Path(self.spec.cwd or self.workspace)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Streams]:
        spec = self.spec
        own = None
        if spec.sandbox is not None:  # the server's own, for as long as it runs
            own = Sandbox.start(spec.sandbox, self.workspace.resolve(), Path(spec.name))
        sandbox = own if spec.sandbox is not None else self.sandbox
        command, args = spec.command or "", list(spec.args)
        env = server_environment(spec.env)
        if sandbox is not None:
            policy = sandbox.policy()
            env.update(policy.env)
            command, args = (
                sys.executable,
                ["-I", "-S", confine.__file__, policy.to_json(), "--", command, *args],
            )
        params = StdioServerParameters(command=command, args=args, env=env, cwd=str(self.cwd))
        tail = self._stderr = StderrTail()
        try:
            async with stdio_client(params, errlog=tail.writer()) as streams:
                tail.release_writer()  # the child has its copy; EOF then means it exited
                yield streams
        finally:
            tail.release_writer()
            if own is not None:
                own.close()

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
