"""`build_agent`: the one assembly path for the CLI, the RPC mode and the SDK.

The order is fixed (DESIGN.md section 3):

1. services: trust decision, model provider, session store (and memory store);
2. `ResourceLoader.reload()`: one snapshot of context files, skills, templates,
   extension declarations and diagnostics;
3. extensions loaded, then the tool registry and the prompt provider, both from that
   same snapshot;
4. the runner.

A provider that an extension registers is created after step 3, since it does not
exist before; every other provider is created first, so a missing API key fails
before any project code runs.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Unpack

from assembler.agent.agent import Agent
from assembler.agent.conversation import open_session
from assembler.agent.guards import guarded_paths
from assembler.agent.io import AgentIO, check_output_tool
from assembler.agent.lifecycle import Assembly
from assembler.agent.model_choice import (
    ModelChoice,
    check_model,
    choose_model,
    create_model_provider,
    is_builtin_provider,
    manifest_settings,
    shown_endpoint,
)
from assembler.agent.options import BuildChanges, BuildOptions
from assembler.agent.services import (
    check_extras,
    create_session,
    create_telemetry,
    key_variables,
    open_memory,
    trace_factory,
    traced_provider,
)
from assembler.agent.subagents import Team
from assembler.agent.team import load_team
from assembler.agent.trusting import TreeTrust
from assembler.errors import SessionError
from assembler.manifest.model import BuiltinToolSet, Manifest, MCPToolSet, PermissionsSpec
from assembler.messages import ModelSettings
from assembler.permissions.gate import PermissionGate
from assembler.permissions.hidden import hidden_patterns
from assembler.permissions.policy import PermissionPolicy
from assembler.providers.windows import context_window
from assembler.resources.loader import LoaderFlags, ResourceLoader, ResourceSnapshot
from assembler.runner.compaction import DEFAULT_KEEP_TOKENS
from assembler.runner.loop import AgentRunner
from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import SandboxSpec
from assembler.sandbox.support import require as require_sandbox
from assembler.sessions.store import Session, SessionStore
from assembler.tools.base import ToolContext
from assembler.tools.builtin.names import BUILTIN_SETS
from assembler.tools.environment import tool_environment
from assembler.tools.processes import prepare_sandbox
from assembler.validation.load import load_manifest


def skill_directories(
    manifest: Manifest, flags: LoaderFlags | None, snapshot: ResourceSnapshot
) -> tuple[Path, ...]:
    """The directories the file tools may read outside the workspace: the skill
    directories the manifest declares and `--skill` names, and the folder of every
    skill loaded (a symlinked skill folder lives where it points). Never written."""
    declared = () if flags is not None and flags.no_skills else manifest.skills
    explicit = () if flags is None else flags.explicit_skills
    folders = [*declared, *(p.parent if p.is_file() else p for p in explicit)]
    folders += [skill.directory for skill in snapshot.skills]
    return tuple(dict.fromkeys(Path(os.path.realpath(folder)) for folder in folders))


def build_agent(
    manifest: Manifest | str | Path,
    options: BuildOptions | None = None,
    /,
    **changes: Unpack[BuildChanges],
) -> Agent:
    """Build an agent from a manifest (or a manifest path), in the fixed order.

    `options` says how (`BuildOptions`: model or provider, loader flags, sessions,
    trust, permissions); keyword arguments change single fields of it, so
    `build_agent(path, trust=True, provider=model)` reads as before.
    """
    options = replace(options or BuildOptions(), **changes)
    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest)
    io = AgentIO(manifest)  # parameters checked before anything runs or asks
    if options.params is not None:
        io.bind(options.params)
    environment = os.environ if options.env is None else options.env
    flags, provider = options.flags, options.provider

    # 1. services
    check_extras(manifest)  # no prompt for trust when the run cannot start anyway
    for sandbox in (manifest.sandbox, *_server_sandboxes(manifest)):  # nor without its sandbox
        require_sandbox(sandbox, manifest.path)
    member = options.team if options.team is not None else load_team(manifest, env=environment)
    tree_trust = TreeTrust.decide(  # for the whole tree, before any of its code runs
        member,
        options.trust,
        options.ask_trust,
        include_extensions=not (flags and flags.no_extensions),
        model=options.model,
        replays=provider is None,
    )
    choice = None if provider is not None else check_model(manifest, options.model, environment)
    model_provider = provider
    if choice is not None and is_builtin_provider(choice.provider):
        model_provider = create_model_provider(choice, environment)
    recording = _session(manifest, options.session, options.fork, options.session_dir)
    if recording is None and options.record_session:
        recording = create_session(manifest, choice, provider, options.session_dir)
    telemetry = create_telemetry(manifest, choice, provider, environment)
    subagents = Team(member, build_agent, replace(options, env=environment), trust=tree_trust)
    assembly = Assembly(
        manifest,
        trace_factory=trace_factory(recording),
        agent_tools=subagents.tools,
        telemetry=telemetry,
    )

    # 2. one resource snapshot
    loader = ResourceLoader(manifest, flags)
    snapshot = loader.reload()

    # 3. extensions, tools and prompt, from that snapshot
    assembly.load_extensions(snapshot)
    if model_provider is None:  # a provider that an extension registers
        assert choice is not None
        model_provider = create_model_provider(choice, environment, assembly.providers)
    traced = traced_provider(model_provider, telemetry)  # `chat` spans, memory's included
    assembly.memory = open_memory(manifest, traced, choice)
    parts = assembly.parts(snapshot)
    if io.output is not None:
        check_output_tool(parts.registry, io.output.tool)

    # 4. the runner
    limits = manifest.limits
    assembly.sandbox = Sandbox.start(manifest.sandbox, manifest.workspace.resolve(), manifest.path)
    if assembly.sandbox is not None and _runs_commands(manifest):
        prepare_sandbox(assembly.sandbox.policy().to_dict())
    window = limits.context_window or _known_window(choice or _given_choice(manifest, options))
    runner = AgentRunner(
        endpoint=shown_endpoint(choice, environment) if choice is not None else "",
        permissions=_permission_gate(manifest, options),
        provider=traced,
        parts=parts,
        tool_context=ToolContext(
            workspace=manifest.workspace.resolve(),
            timeout=limits.tool_timeout,
            max_output_lines=limits.max_output_lines,
            max_output_bytes=limits.max_output_bytes,
            env=tool_environment(
                environment,
                passthrough=manifest.tools.env.passthrough,
                assigned=manifest.tools.env.set,
                also_secret=key_variables(manifest, choice),
            ),
            read_roots=skill_directories(manifest, flags, snapshot),
            hidden=hidden_patterns(manifest.permissions, options.permission_mode),
            guarded=guarded_paths(member),
            sandbox=assembly.sandbox,
            processes=assembly.processes,
        ),
        settings=choice.settings if choice is not None else _given_settings(manifest, options),
        model_name=choice.name if choice is not None else "",
        max_turns=limits.max_turns,
        max_consecutive_blocks=limits.max_consecutive_blocks,
        max_parallel_tools=limits.max_parallel_tools,
        context_window=window,
        compact_reserve=limits.compact_reserve,
        keep_tokens=min(DEFAULT_KEEP_TOKENS, window // 4) if window else DEFAULT_KEEP_TOKENS,
        output=io.output,
    )
    agent = Agent(
        manifest=manifest,
        provider=model_provider,
        loader=loader,
        runner=runner,
        parts=parts,
        assembly=assembly,
        session=recording,
        team=subagents,
        io=io,
    )
    if telemetry is not None:  # spans name the session the agent is in at the time
        telemetry.conversation = lambda: agent.session.id if agent.session else None
    return agent


def _session(
    manifest: Manifest,
    session: str | Path | Session | None,
    fork: str | None,
    directory: Path | None,
) -> Session | None:
    """The session to continue (or to fork from), opened before anything is built."""
    if session is None:
        if fork is not None:
            raise SessionError("`fork` names an entry of a session: pass `session` too")
        return None
    opened = (
        session
        if isinstance(session, Session)
        else open_session(SessionStore.for_agent(manifest.name, directory), manifest, session)
    )
    return opened.fork(fork) if fork is not None else opened


def _runs_commands(manifest: Manifest) -> bool:
    """Whether the agent has `bash` (so its sandbox is worth preparing at build)."""
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, BuiltinToolSet):
            names = [m for n in tool_set.names for m in BUILTIN_SETS.get(n, (n,))]
            if "bash" in names and (tool_set.allow is None or "bash" in tool_set.allow):
                return True
    return False


def _server_sandboxes(manifest: Manifest) -> list[SandboxSpec]:
    """The sandboxes MCP stdio servers declare for themselves."""
    servers = [s.server for s in manifest.tools.sets if isinstance(s, MCPToolSet)]
    return [server.sandbox for server in servers if server.sandbox is not None]


def _permission_gate(manifest: Manifest, options: BuildOptions) -> PermissionGate | None:
    """The manifest's rules at run time; none without rules or a mode that changes asks."""
    if manifest.permissions == PermissionsSpec() and options.permission_mode == "default":
        return None
    policy = PermissionPolicy.from_spec(
        manifest.permissions, workspace=manifest.workspace.resolve(), mode=options.permission_mode
    )
    return PermissionGate(policy, options.approver)


def _known_window(choice: ModelChoice | None) -> int | None:
    return context_window(choice.provider, choice.name) if choice is not None else None


def _given_settings(manifest: Manifest, options: BuildOptions) -> ModelSettings | None:
    """The settings a given provider is sent: those of `options.model` when it names
    one too (a replay, with the model its session ran), else the manifest's own."""
    if options.model:
        return choose_model(manifest, options.model, options.env).settings
    return manifest_settings(manifest)


def _given_choice(manifest: Manifest, options: BuildOptions) -> ModelChoice | None:
    """The model a given provider stands for (`options.model`, else the manifest's),
    for its context window: a replay compacts where its session did."""
    if not options.model and manifest.model is None:
        return None
    return choose_model(manifest, options.model, options.env)
