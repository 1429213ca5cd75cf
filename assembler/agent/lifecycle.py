"""What an agent re-assembles over its life: on reload, on start, on close.

`Assembly` keeps the inputs that outlive one snapshot (the manifest, loaded
extensions, MCP connections, the memory session) and builds `AgentParts` from a
snapshot, always through the one `assemble_parts`. MCP servers connect later (they
need a running event loop): their tools join the live registry in their place,
so the prompt provider, hooks and trace built with the parts stay as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.agent.parts import AgentParts, assemble_parts
from assembler.agent.services import TraceFactory
from assembler.agent.tool_collection import AgentTools, clash
from assembler.errors import Issue
from assembler.extensions.loader import LoadedExtension, load_extensions
from assembler.extras import requires
from assembler.manifest.model import Manifest, MCPToolSet
from assembler.memory.hooks import MemoryHooks
from assembler.providers.registry import ProviderRegistry
from assembler.resources.loader import ResourceSnapshot
from assembler.runner.hooks import RunnerHooks
from assembler.sandbox.runtime import Sandbox
from assembler.tools.base import Tool
from assembler.tools.processes import ProcessScope
from assembler.trust import code_roots

if TYPE_CHECKING:
    from assembler.mcp.toolset import MCPToolsets
    from assembler.memory.session import MemorySession
    from assembler.messages import Message
    from assembler.telemetry import AgentTelemetry


@dataclass
class Assembly:
    manifest: Manifest
    trace_factory: TraceFactory | None = None
    agent_tools: AgentTools | None = None
    extensions: list[LoadedExtension] = field(default_factory=list)
    mcp: MCPToolsets | None = None
    memory: MemorySession | None = None
    diagnostics: list[Issue] = field(default_factory=list)
    providers: ProviderRegistry = field(default_factory=ProviderRegistry.builtin)
    telemetry: AgentTelemetry | None = None
    sandbox: Sandbox | None = None
    """What confines every process the agent starts (None: nothing is confined)."""
    processes: ProcessScope = field(default_factory=ProcessScope)
    """The agent's commands that may still run: stopped when it closes."""

    @property
    def workspace(self) -> Path:
        return self.manifest.workspace.resolve()

    def load_extensions(self, snapshot: ResourceSnapshot) -> None:

        self.extensions = load_extensions(
            snapshot.extensions, self.workspace, code_roots(self.manifest)
        )
        providers = ProviderRegistry.builtin()  # this agent's own: never process-wide
        for extension in self.extensions:
            for name, factory in extension.registrations.providers:
                providers.register(name, factory)
        self.providers = providers

    def parts(self, snapshot: ResourceSnapshot) -> AgentParts:
        """Tools, prompt and hooks from `snapshot` and the current live inputs."""
        tools: list[Tool] = list(self.mcp.tools) if self.mcp is not None else []
        hooks: list[RunnerHooks] = []
        memory_source = None
        if self.memory is not None:
            tools.extend(self.memory.tools())
            hooks.append(MemoryHooks(self.memory))
            if not self.memory.emit_context_messages:
                memory_source = self.memory.selected
        return assemble_parts(
            self.manifest,
            snapshot,
            extensions=self.extensions,
            extra_tools=tools,
            extra_hooks=hooks,
            memory=memory_source,
            trace_factory=self.trace_factory,
            extra_diagnostics=self.diagnostics,
            agent_tools=self.agent_tools,
            telemetry=self.telemetry,
        )

    def rebuild(self, snapshot: ResourceSnapshot) -> AgentParts:
        """For `agent.reload()`: extensions run their setup again on the new snapshot."""
        self.load_extensions(snapshot)
        return self.parts(snapshot)

    def mcp_sets(self) -> list[MCPToolSet]:
        return [s for s in self.manifest.tools.sets if isinstance(s, MCPToolSet)]

    async def connect_mcp(self, parts: AgentParts) -> None:
        """Start the manifest's MCP servers and add their tools to `parts`; a server
        that fails becomes an error diagnostic and the agent goes on without it."""
        sets = self.mcp_sets()
        if not sets or self.mcp is not None:
            return
        # Imported here: agents without MCP servers never load the MCP SDK.
        with requires("mcp", f"MCP server `{sets[0].server.name}`"):
            from assembler.mcp.toolset import connect_tool_sets

        self.mcp = await connect_tool_sets(sets, self.workspace, strict=False, sandbox=self.sandbox)
        join_late_tools(parts, self.mcp.tools)

    def poll(self) -> list[Issue]:
        """Diagnostics that arose while running (an MCP server that died, a memory
        selection the model got wrong), each reported once."""
        issues: list[Issue] = []
        if self.mcp is not None:
            issues.extend(
                Issue(severity="error" if d.severity == "error" else "warning", message=d.message)
                for d in self.mcp.new_diagnostics()
            )
        if self.memory is not None:
            issues.extend(
                Issue(severity="warning", message=m) for m in self.memory.take_diagnostics()
            )
        return issues

    async def aclose(self, messages: Sequence[Message] = ()) -> None:
        """End of session: memory extraction and consolidation, then servers stop,
        then every process the agent's commands left running (background jobs), then
        the sandbox (its proxy and temporary directory)."""
        try:
            if self.memory is not None and messages:
                await self.memory.end_session(messages)
        finally:
            try:
                if self.mcp is not None:
                    await self.mcp.aclose()
            finally:
                try:
                    await self.processes.aclose()
                finally:
                    if self.sandbox is not None:
                        self.sandbox.close()


def join_late_tools(parts: AgentParts, tools: Sequence[Tool]) -> None:
    """Add tools that exist only once the agent runs (MCP) to the live registry, in
    the place the clash rules give them: after built-in, Python and extension tools,
    before the memory tool. A name already taken keeps its first owner."""
    registry = parts.registry
    tail = [registry.remove(t.name) for t in registry.tools() if t.source == "memory"]
    for tool in [*tools, *tail]:
        existing = registry.get(tool.name)
        if existing is None:
            registry.register(tool)
        elif existing is not tool:
            parts.diagnostics.append(clash(tool, existing))
