"""The prompt side of an agent without a model call: what `assemble render` shows.

A dry run builds it from files alone: Python tools are described from their parsed
source, extensions are not loaded and MCP servers are not started; what only running
code could tell (tools an extension or a server would add) is listed in `unknowns`.
A live preview builds the real agent (trust required), starts its servers, and
reads the prompt the first request would carry.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.agent.team import TeamMember, delegate_tool, load_team
from assembler.agent.tool_collection import manifest_tools
from assembler.errors import Issue, ProviderError
from assembler.manifest.model import AgentToolSet, Manifest, MCPToolSet
from assembler.prompt.binding import make_prompt_provider
from assembler.prompt.renderer import MemoryEntry, RenderedPrompt
from assembler.resources.loader import LoaderFlags, ResourceLoader, ResourceSnapshot
from assembler.sandbox.view import describe as describe_sandbox
from assembler.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from assembler.messages import ModelRequest, StreamEvent
    from assembler.trust import TrustPrompt


@dataclass(frozen=True)
class Preview:
    """What `render` shows of an agent: its prompt, tools and what a dry run cannot know."""

    rendered: RenderedPrompt
    tools: tuple[Tool, ...]
    snapshot: ResourceSnapshot
    diagnostics: tuple[Issue, ...] = ()
    unknowns: tuple[str, ...] = ()
    memory: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = ()
    permissions: Mapping[str, object] = field(default_factory=dict)
    """The effective permission rules, by precedence (deny, ask, allow, default)."""
    sandbox: Mapping[str, Any] = field(default_factory=dict)
    """The effective sandbox of the agent's processes (`effective_sandbox`)."""
    failures: tuple[Issue, ...] = ()
    """What failed while the agent started (an MCP server): a run would lack it, so the
    prompt shown is not the one a working setup gives (also in `diagnostics`)."""
    parameters: Mapping[str, Any] | None = None
    """The parameter values the prompt was rendered with (None: the agent has none)."""
    first_message: str | None = None
    """The first user message a run without a prompt sends (the rendered `task`)."""
    output: Mapping[str, Any] | None = None
    """The schema of the typed answer (`output:`), None without one."""


def effective_sandbox(manifest: Manifest) -> dict[str, Any]:
    """What confines the agent's processes, as `render` shows it: the block as it
    applies (inherited by a sub-agent, paths resolved against the workspace), and each
    MCP stdio server that declares its own."""
    spec = manifest.sandbox
    reach = spec.resolve(manifest.workspace.resolve()) if spec is not None else None
    shown = describe_sandbox(spec, reach)
    shown["declared"] = spec is not None
    servers = {
        s.server.name: describe_sandbox(
            s.server.sandbox, s.server.sandbox.resolve(manifest.workspace.resolve())
        )
        for s in manifest.tools.sets
        if isinstance(s, MCPToolSet) and s.server.sandbox is not None
    }
    if servers:
        shown["servers"] = servers
    return shown


def effective_permissions(manifest: Manifest) -> dict[str, object]:
    """The manifest's permission rules in the order they are applied (a deny wins,
    then ask, then allow, then the default), as `render --format json` lists them."""
    spec = manifest.permissions
    return {
        "deny": list(spec.deny),
        "ask": list(spec.ask),
        "allow": list(spec.allow),
        "default": spec.default,
    }


#: Selection strategies whose choice does not depend on the user's message: the
#: prompt's `## memory` section is then the same for any first message, and shown.
INPUT_FREE_STRATEGIES = ("all", "none")


def memory_note(manifest: Manifest, user_input: str | None) -> tuple[str, ...]:
    """What to say on stderr when the memory shown depends on a message not given."""
    policy = manifest.memory
    if policy is None or user_input is not None or policy.strategy in INPUT_FREE_STRATEGIES:
        return ()
    return (
        f"memory: selection `{policy.strategy}` depends on the user's message; "
        '--input "..." shows the memories it would select',
    )


def dry_run_unknowns(manifest: Manifest, flags: LoaderFlags) -> list[str]:
    unknowns: list[str] = []
    if not flags.no_extensions:
        for extension in manifest.extensions:
            unknowns.append(
                f"extension `{extension.name}` is not loaded in a dry run: tools, commands "
                "and handlers it registers are not shown"
            )
    seen: set[str] = set()
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, MCPToolSet) and tool_set.server.name not in seen:
            seen.add(tool_set.server.name)
            unknowns.append(
                f"MCP server `{tool_set.server.name}` is not started in a dry run: its tools "
                "are not shown"
            )
    return unknowns


def preview_dry_run(
    manifest: Manifest,
    flags: LoaderFlags | None = None,
    *,
    user_input: str | None = None,
    team: TeamMember | None = None,
    params: Mapping[str, Any] | None = None,
) -> Preview:
    """Everything a dry run can know, reading files only. `team`: the sub-agent tree
    of `manifest` (loaded here when not given), whose tools are known from files.
    `params`: values of the manifest's parameters (checked; defaults filled in)."""
    flags = flags or LoaderFlags()
    typed = _typed_view(manifest, params)
    snapshot = ResourceLoader(manifest, flags).reload()
    member = team or load_team(manifest, env=os.environ, unset_variables="warning")

    def agent_tools(spec: AgentToolSet) -> list[Tool]:
        return [delegate_tool(d, _not_run) for d in member.delegates if d.spec is spec]

    collection = manifest_tools(manifest, static=True, agents=agent_tools)
    unknowns = dry_run_unknowns(manifest, flags)
    memory = _dry_run_memory(manifest, user_input, unknowns)
    collection.extend(memory.tools)
    registry = collection.registry()
    source = (lambda: memory.entries) if memory.in_prompt else None
    provider = make_prompt_provider(manifest, snapshot, registry, source, typed.parameters)
    return Preview(
        **typed.fields(),
        rendered=provider.render(),
        tools=registry.tools(),
        snapshot=snapshot,
        diagnostics=(*snapshot.diagnostics, *collection.diagnostics),
        unknowns=tuple(unknowns),
        memory=tuple(_describe(entry) for entry in memory.entries),
        notes=memory_note(manifest, user_input),
        permissions=effective_permissions(manifest),
        sandbox=effective_sandbox(manifest),
    )


@dataclass(frozen=True)
class _MemoryPreview:
    """A dry run's memory: the records selected, the memory tools, and whether
    the records go into the system prompt."""

    entries: tuple[MemoryEntry, ...] = ()
    tools: tuple[Tool, ...] = ()
    in_prompt: bool = False


def _dry_run_memory(
    manifest: Manifest, user_input: str | None, unknowns: list[str]
) -> _MemoryPreview:
    """The memory tools and, for `--input`, the selection, from a store opened
    read-only: a dry run writes no index, no lock file, nothing."""
    policy = manifest.memory
    if policy is None:
        return _MemoryPreview()
    import asyncio

    from assembler.memory.extraction import make_remember_tool
    from assembler.memory.selection import Selector
    from assembler.memory.store import MemoryStore

    store = MemoryStore.open(policy.store, policy, read_only=True)
    tools = (make_remember_tool(store, policy),) if policy.extraction_tool else ()
    in_prompt = policy.injection == "system"
    if user_input is None and policy.strategy not in INPUT_FREE_STRATEGIES:
        return _MemoryPreview((), tools, in_prompt)
    if policy.strategy == "model":
        unknowns.append(
            "memory selection `model` asks the model; a dry run does not, so no memories are shown"
        )
        return _MemoryPreview((), tools, in_prompt)
    selection = asyncio.run(Selector(store, policy).select(user_input or ""))
    return _MemoryPreview(selection.entries, tools, in_prompt)


@dataclass(frozen=True)
class _TypedView:
    """What a preview shows of an agent's parameters, task and output."""

    parameters: Mapping[str, Any] | None = None
    first_message: str | None = None
    output: Mapping[str, Any] | None = None

    def fields(self) -> dict[str, Any]:
        return {
            "parameters": self.parameters,
            "first_message": self.first_message,
            "output": self.output,
        }


def _typed_view(manifest: Manifest, params: Mapping[str, Any] | None) -> _TypedView:
    """The values bound (a `ParameterError` lists every problem), the task rendered
    with them, and the output schema; empty for an agent with none of the three (which
    never pays for compiling a schema)."""
    if not (manifest.parameters or manifest.task or manifest.output or params):
        return _TypedView()
    from assembler.agent.io import AgentIO  # compiles schemas: only for a typed agent

    io = AgentIO(manifest)
    values = io.bind(params)
    first = io.first_message(None) if manifest.task is not None else None
    output = dict(io.output.schema) if io.output is not None else None
    return _TypedView(values if manifest.parameters else None, first, output)


async def _not_run(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("a dry run does not run sub-agents", is_error=True)


def _describe(entry: MemoryEntry) -> str:
    return f"{entry.name} ({entry.type}): {entry.description}"


class NoModel:
    """Stands in for the model when only the prompt side is wanted."""

    name = "none"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise ProviderError("render does not call the model")
        yield  # unreachable; makes this an async generator like every provider

    async def aclose(self) -> None:
        return None


async def preview_live(
    manifest: Manifest,
    flags: LoaderFlags | None = None,
    *,
    trust: bool | None = None,
    ask_trust: TrustPrompt | None = None,
    session_dir: Path | None = None,
    user_input: str | None = None,
    team: TeamMember | None = None,
    model: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> Preview:
    """Build the real agent (extensions loaded, servers started) and read its prompt;
    `team` when `manifest` is a sub-agent of the tree it comes from. Without `model`
    no model is created (none is needed to render); with it, the agent is built as
    `run --model` builds it (its SDK and API key required), and a `model` memory
    selection for `user_input` asks it: the one request render can make."""
    # Imported here: a dry run never builds an agent, and the build's imports (runner,
    # providers, extensions) would add to every `render --dry-run` start-up.
    from assembler.agent.build import build_agent

    typed = _typed_view(manifest, params)
    agent = build_agent(
        manifest,
        provider=NoModel() if model is None else None,
        model=model,
        flags=flags,
        record_session=False,
        trust=trust,
        ask_trust=ask_trust,
        session_dir=session_dir,
        team=team,
    )
    agent.parts.prompt.parameters = dict(typed.parameters or {})
    try:
        await agent.start()
        selected: tuple[MemoryEntry, ...] = ()
        memory = agent.assembly.memory
        policy = manifest.memory
        wanted = user_input is not None or (
            policy is not None and policy.strategy in INPUT_FREE_STRATEGIES
        )
        if memory is not None and wanted:
            selected = await memory.select(user_input or "")
        started = tuple(agent.assembly.poll())
        return Preview(
            **typed.fields(),
            rendered=agent.parts.prompt.render(),
            tools=agent.registry.tools(),
            snapshot=agent.snapshot,
            diagnostics=(*agent.diagnostics, *started),
            failures=tuple(issue for issue in started if issue.severity == "error"),
            memory=tuple(_describe(entry) for entry in selected),
            notes=memory_note(manifest, user_input),
            permissions=effective_permissions(manifest),
            sandbox=effective_sandbox(manifest),
        )
    finally:
        await agent.aclose()
