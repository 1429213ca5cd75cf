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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.agent import Agent
from assembler.assembly.lifecycle import Assembly
from assembler.assembly.project_code import project_code
from assembler.errors import ProviderError, TrustError
from assembler.manifest.model import Manifest
from assembler.messages import ModelSettings
from assembler.providers.base import ModelProvider
from assembler.resources.loader import LoaderFlags, ResourceLoader
from assembler.runner.loop import AgentRunner
from assembler.tools.base import ToolContext
from assembler.tools.environment import tool_environment

if TYPE_CHECKING:
    from assembler.audit import TraceWriter
    from assembler.memory.session import MemorySession
    from assembler.sessions.store import Session

TrustPrompt = Callable[[Path, list[str]], bool]


@dataclass(frozen=True)
class ModelChoice:
    provider: str
    name: str
    base_url: str | None
    api_key_env: str | None
    settings: ModelSettings
    options: Mapping[str, object]

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


def choose_model(manifest: Manifest, override: str | None = None) -> ModelChoice:
    """The manifest's model, or `override` (`provider:name`, as `--model` gives it).

    An override of the same provider keeps the manifest's `base_url`, key variable
    and options; another provider starts from defaults.
    """
    from assembler.providers.registry import parse_model_string

    spec = manifest.model
    if override:
        provider, name = parse_model_string(override)
        if spec is None or spec.provider != provider:
            return _with_script(
                manifest, ModelChoice(provider, name, None, None, ModelSettings(), {})
            )
    elif spec is not None:
        provider, name = spec.provider, spec.name
    else:
        raise ProviderError(
            f"{manifest.name}: no model: set `model:` in the manifest or pass --model provider:name"
        )
    assert spec is not None
    options = dict(spec.options)
    if spec.script is not None:
        options["script"] = str(spec.script)
    settings = ModelSettings(temperature=spec.temperature, max_tokens=spec.max_tokens)
    return _with_script(
        manifest, ModelChoice(provider, name, spec.base_url, spec.api_key_env, settings, options)
    )


def _with_script(manifest: Manifest, choice: ModelChoice) -> ModelChoice:
    """`scripted:<file>` names its script, relative to the manifest."""
    if choice.provider != "scripted" or "script" in choice.options:
        return choice
    script = Path(os.path.normpath(manifest.directory / choice.name))
    return ModelChoice(
        choice.provider, choice.name, None, None, choice.settings, {"script": str(script)}
    )


def create_model_provider(choice: ModelChoice, env: Mapping[str, str]) -> ModelProvider:
    from assembler.providers.registry import create_provider

    return create_provider(
        choice.provider,
        choice.name,
        base_url=choice.base_url,
        api_key_env=choice.api_key_env,
        settings=choice.settings,
        options=choice.options,
        env=env,
    )


def check_trust(
    manifest: Manifest,
    trust: bool | None,
    ask: TrustPrompt | None = None,
    flags: LoaderFlags | None = None,
) -> None:
    """Refuse to go on when project code would run in an untrusted directory.

    `trust=True` is the caller's explicit decision (`--trust`, or an SDK user who
    knows the code); otherwise the user's trust store decides, then `ask` (an
    interactive question per directory), and without either the answer is no.
    """
    code = project_code(manifest, include_extensions=not (flags and flags.no_extensions))
    if not code or trust is True:
        return
    from assembler.trust import TrustStore

    store = TrustStore()
    for root in dict.fromkeys(item.root for item in code):
        if store.is_trusted(root):
            continue
        listing = [item.description for item in code if item.root == root]
        if trust is None and ask is not None and ask(root, listing):
            continue
        lines = "\n".join(f"  - {item}" for item in listing)
        raise TrustError(
            f"{root} is not a trusted directory, and building this agent would run its code:\n"
            f"{lines}\n"
            f"Read that code, then trust the directory with `assemble trust add {root}` "
            "or pass --trust for this run."
        )


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
        from assembler.manifest.loader import load_manifest

        manifest = load_manifest(manifest)
    environment = os.environ if env is None else env

    # 1. services
    check_trust(manifest, trust, ask_trust, flags)
    choice = None if provider is not None else choose_model(manifest, model)
    model_provider = provider
    if choice is not None and _is_builtin_provider(choice.provider):
        model_provider = create_model_provider(choice, environment)
    session = _create_session(manifest, choice, provider, session_dir) if record_session else None
    assembly = Assembly(manifest, trace_factory=_trace_factory(session))
    if model_provider is not None:
        assembly.memory = _open_memory(manifest, model_provider, choice)

    # 2. one resource snapshot
    loader = ResourceLoader(manifest, flags)
    snapshot = loader.reload()

    # 3. extensions, tools and prompt, from that snapshot
    assembly.load_extensions(snapshot)
    if model_provider is None:  # a provider that an extension registers
        assert choice is not None
        model_provider = create_model_provider(choice, environment)
        assembly.memory = _open_memory(manifest, model_provider, choice)
    parts = assembly.parts(snapshot)

    # 4. the runner
    limits = manifest.limits
    runner = AgentRunner(
        provider=model_provider,
        system_prompt=parts.prompt,
        registry=parts.registry,
        tool_context=ToolContext(
            workspace=manifest.workspace.resolve(),
            timeout=limits.tool_timeout,
            max_output_lines=limits.max_output_lines,
            max_output_bytes=limits.max_output_bytes,
            env=tool_environment(
                environment,
                passthrough=manifest.tools.env.passthrough,
                assigned=manifest.tools.env.set,
                also_secret=_key_variables(manifest, choice),
            ),
        ),
        settings=choice.settings if choice is not None else None,
        model_name=choice.name if choice is not None else "",
        max_turns=limits.max_turns,
        max_consecutive_blocks=limits.max_consecutive_blocks,
        max_parallel_tools=limits.max_parallel_tools,
        hooks=parts.hooks,
        trace=parts.trace,
    )
    if choice is not None and choice.base_url:
        from assembler.urls import display_url

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


def _key_variables(manifest: Manifest, choice: ModelChoice | None) -> list[str]:
    """Variables holding the agent's own API keys, whatever they are called."""
    names = [manifest.model.api_key_env] if manifest.model and manifest.model.api_key_env else []
    if choice is not None and choice.api_key_env:
        names.append(choice.api_key_env)
    return names


def _open_memory(
    manifest: Manifest, provider: ModelProvider, choice: ModelChoice | None
) -> MemorySession | None:
    if manifest.memory is None:
        return None
    from assembler.memory.session import MemorySession

    return MemorySession.open(manifest.memory, provider, model=choice.name if choice else "")


def _is_builtin_provider(name: str) -> bool:
    from assembler.providers.registry import known_providers

    return name in known_providers()


def _create_session(
    manifest: Manifest,
    choice: ModelChoice | None,
    provider: ModelProvider | None,
    session_dir: Path | None,
) -> Session:
    from assembler.sessions.paths import default_session_dir
    from assembler.sessions.store import SessionStore

    store = SessionStore(session_dir or default_session_dir(manifest.name))
    label = choice.label if choice is not None else (provider.name if provider else "")
    return store.create(agent=manifest.name, manifest=manifest.path, model=label)


def _trace_factory(session: Session | None) -> Callable[[dict[str, str]], TraceWriter] | None:
    if session is None:
        return None
    from assembler.audit import TraceWriter

    path = session.path
    trace_path = path.with_name(path.name.removesuffix(".jsonl") + ".trace.jsonl")

    def factory(sources: dict[str, str]) -> TraceWriter:
        return TraceWriter(trace_path, sources)

    return factory
