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
from collections.abc import Mapping
from pathlib import Path

from assembler.agent.agent import Agent
from assembler.agent.lifecycle import Assembly
from assembler.agent.model_choice import (
    choose_model,
    create_model_provider,
    is_builtin_provider,
)
from assembler.agent.services import create_session, key_variables, open_memory, trace_factory
from assembler.manifest.model import Manifest
from assembler.providers.base import ModelProvider
from assembler.resources.loader import LoaderFlags, ResourceLoader, ResourceSnapshot
from assembler.runner.loop import AgentRunner
from assembler.tools.base import ToolContext
from assembler.tools.environment import scrub_environment
from assembler.trust import TrustPrompt, check_trust
from assembler.urls import display_url
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
    *,
    model: str | None = None,
    provider: ModelProvider | None = None,
    flags: LoaderFlags | None = None,
    session_dir: Path | None = None,
    record_session: bool = True,
    trust: bool | None = None,
    ask_trust: TrustPrompt | None = None,
    env: Mapping[str, str] | None = None,
) -> Agent:
    """Build an agent from a manifest (or a manifest path), in the fixed order.

    `provider` replaces the manifest's model with a ready provider (tests use
    `assembler.testing.ScriptedModel`); `model` overrides it by name.
    """
    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest)
    environment = os.environ if env is None else env

    # 1. services
    check_trust(manifest, trust, ask_trust, include_extensions=not (flags and flags.no_extensions))
    choice = None if provider is not None else choose_model(manifest, model)
    model_provider = provider
    if choice is not None and is_builtin_provider(choice.provider):
        model_provider = create_model_provider(choice, environment)
    session = create_session(manifest, choice, provider, session_dir) if record_session else None
    assembly = Assembly(manifest, trace_factory=trace_factory(session))

    # 2. one resource snapshot
    loader = ResourceLoader(manifest, flags)
    snapshot = loader.reload()

    # 3. extensions, tools and prompt, from that snapshot
    assembly.load_extensions(snapshot)
    if model_provider is None:  # a provider that an extension registers
        assert choice is not None
        model_provider = create_model_provider(choice, environment)
    assembly.memory = open_memory(manifest, model_provider, choice)
    parts = assembly.parts(snapshot)

    # 4. the runner
    limits = manifest.limits
    runner = AgentRunner(
        provider=model_provider,
        parts=parts,
        tool_context=ToolContext(
            workspace=manifest.workspace.resolve(),
            timeout=limits.tool_timeout,
            max_output_lines=limits.max_output_lines,
            max_output_bytes=limits.max_output_bytes,
            env=scrub_environment(environment, also=key_variables(manifest, choice)),
            read_roots=skill_directories(manifest, flags, snapshot),
        ),
        settings=choice.settings if choice is not None else None,
        model_name=choice.name if choice is not None else "",
        max_turns=limits.max_turns,
        max_consecutive_blocks=limits.max_consecutive_blocks,
    )
    if choice is not None and choice.base_url:
        runner.endpoint = display_url(choice.base_url)
    return Agent(
        manifest=manifest,
        provider=model_provider,
        loader=loader,
        runner=runner,
        parts=parts,
        assembly=assembly,
        session=session,
    )
