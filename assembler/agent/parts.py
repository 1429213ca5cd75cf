"""The model-facing parts of an agent, built together from one snapshot.

`AgentParts` is what `Agent.reload()` swaps as a unit: the snapshot, the tool
registry built from it, the prompt provider bound to that registry, and the hooks of
the extensions loaded with it. Building them in one function is the guarantee that
the prompt's tool catalog and the schemas sent to the model agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from assembler.agent.services import TraceFactory
from assembler.agent.tool_collection import AgentTools, manifest_tools
from assembler.errors import Issue
from assembler.extensions.api import Command
from assembler.extensions.hooks import ExtensionHooks
from assembler.extensions.loader import LoadedExtension
from assembler.manifest.model import Manifest
from assembler.prompt.binding import make_prompt_provider
from assembler.prompt.provider import MemorySource, SystemPromptProvider
from assembler.resources.loader import ResourceSnapshot
from assembler.runner.hooks import HookChain, RunnerHooks
from assembler.runner.parts import TraceSink
from assembler.telemetry import AgentTelemetry, wrap_hooks, wrap_trace
from assembler.tools.base import Tool
from assembler.tools.registry import ToolRegistry


@dataclass
class AgentParts:
    snapshot: ResourceSnapshot
    registry: ToolRegistry
    prompt: SystemPromptProvider
    hooks: RunnerHooks
    extension_hooks: ExtensionHooks
    extensions: tuple[LoadedExtension, ...] = ()
    commands: dict[str, Command] = field(default_factory=dict)
    diagnostics: list[Issue] = field(default_factory=list)
    trace: TraceSink | None = None
    _reported: int = 0

    def pending_diagnostics(self) -> list[Issue]:
        """Diagnostics not yet shown to the user (each is shown once)."""
        pending = self.diagnostics[self._reported :]
        self._reported = len(self.diagnostics)
        return pending


def assemble_parts(
    manifest: Manifest,
    snapshot: ResourceSnapshot,
    *,
    extensions: Sequence[LoadedExtension] = (),
    extra_tools: Sequence[Tool] = (),
    extra_hooks: Sequence[RunnerHooks] = (),
    memory: MemorySource | None = None,
    trace_factory: TraceFactory | None = None,
    extra_diagnostics: Sequence[Issue] = (),
    agent_tools: AgentTools | None = None,
    telemetry: AgentTelemetry | None = None,
) -> AgentParts:
    """Registry, prompt and hooks from one snapshot (see module doc for the order)."""
    collection = manifest_tools(manifest, static=False, agents=agent_tools)
    commands: dict[str, Command] = {}
    for extension in extensions:
        collection.extend(extension.registrations.tools)
        for command in extension.registrations.commands:
            commands.setdefault(command.name, command)
    collection.extend(extra_tools)
    registry = collection.registry()
    sources = registry.sources()
    extension_hooks = ExtensionHooks(
        extensions,
        agent=manifest.name,
        workspace=manifest.workspace.resolve(),
        timeout=manifest.limits.hook_timeout,
        tool_sources=sources,
    )
    hooks: RunnerHooks = HookChain([*extra_hooks, extension_hooks])
    trace: TraceSink | None = trace_factory(sources) if trace_factory is not None else None
    if telemetry is not None:  # spans around the whole chain, which decides as before
        hooks, trace = wrap_hooks(hooks, telemetry), wrap_trace(trace, telemetry)
    return AgentParts(
        snapshot=snapshot,
        registry=registry,
        prompt=make_prompt_provider(manifest, snapshot, registry, memory, keep_compiled=True),
        hooks=hooks,
        extension_hooks=extension_hooks,
        extensions=tuple(extensions),
        commands=commands,
        diagnostics=[*snapshot.diagnostics, *collection.diagnostics, *extra_diagnostics],
        trace=trace,
    )
