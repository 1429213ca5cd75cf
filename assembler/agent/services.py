"""The services step of the build: session file, audit trace and memory session.

Each is optional (a preview records no session, a manifest may have no memory), and
each is created once per agent by `build_agent`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.extras import require
from assembler.manifest.model import Manifest, MCPToolSet
from assembler.providers.base import ModelProvider
from assembler.providers.endpoints import OFFICIAL_BASE_URLS, effective_base_url
from assembler.telemetry import AgentTelemetry, wrap_provider

if TYPE_CHECKING:
    from assembler.agent.model_choice import ModelChoice
    from assembler.memory.session import MemorySession
    from assembler.sessions.store import Session
    from assembler.sessions.trace import TraceWriter

TraceFactory = Callable[[Mapping[str, str]], "TraceWriter"]
"""Makes the audit trace of an agent once its tools (and their sources) are known."""


def check_extras(manifest: Manifest) -> None:
    """Fail before anything is created (a session file, a server) when the manifest
    needs an optional package this install lacks: MCP servers need the MCP SDK. The
    model's SDK is checked when its provider is created, which comes first."""
    for spec in manifest.tools.sets:
        if isinstance(spec, MCPToolSet):
            require("mcp", f"MCP server `{spec.server.name}`")


def create_telemetry(
    manifest: Manifest,
    choice: ModelChoice | None,
    provider: ModelProvider | None,
    env: Mapping[str, str],
) -> AgentTelemetry | None:
    """The agent's OpenTelemetry spans, or None when `opentelemetry-api` is not
    installed (then nothing is wrapped)."""
    if choice is not None:
        provider_name, model = choice.provider, choice.name
        endpoint = telemetry_endpoint(choice, env)
    else:  # a ready provider (`build_agent(provider=...)`): its `provider:model` name
        provider_name, _, model = (provider.name if provider else "").partition(":")
        endpoint = None
    return AgentTelemetry.create(
        agent_name=manifest.name,
        agent_description=manifest.description,
        provider_name=provider_name,
        model=model,
        endpoint=endpoint,
        env=env,
    )


def telemetry_endpoint(choice: ModelChoice, env: Mapping[str, str]) -> str | None:
    """The server a model's requests go to, for spans' `server.address`."""
    endpoint = effective_base_url(choice.provider, choice.base_url, env)
    return endpoint or OFFICIAL_BASE_URLS.get(choice.provider)


def traced_provider(provider: ModelProvider, telemetry: AgentTelemetry | None) -> ModelProvider:
    """The runner's provider: with a `chat` span per request when the agent has telemetry."""
    if telemetry is None:
        return provider
    return wrap_provider(provider, telemetry)


def key_variables(manifest: Manifest, choice: ModelChoice | None) -> list[str]:
    """Variables holding the agent's own API keys, whatever they are called."""
    names = [manifest.model.api_key_env] if manifest.model and manifest.model.api_key_env else []
    if choice is not None and choice.api_key_env:
        names.append(choice.api_key_env)
    return names


def open_memory(
    manifest: Manifest, provider: ModelProvider, choice: ModelChoice | None
) -> MemorySession | None:
    if manifest.memory is None:
        return None
    # Imported here: an agent without memory never loads the memory package.
    from assembler.memory.session import MemorySession

    return MemorySession.open(manifest.memory, provider, model=choice.name if choice else "")


def create_session(
    manifest: Manifest,
    choice: ModelChoice | None,
    provider: ModelProvider | None,
    session_dir: Path | None,
) -> Session:
    # Imported here to keep `render` and `validate` start-up free of the session store.
    from assembler.sessions.store import SessionStore
    from assembler.sessions.workspace_record import record_start

    label = choice.label if choice is not None else (provider.name if provider else "")
    workspace = manifest.workspace.resolve()
    return SessionStore.for_agent(manifest.name, session_dir).start(
        agent=manifest.name,
        manifest=manifest.path,
        model=label,
        workspace=workspace,
        workspace_start=record_start(workspace),
    )


def trace_factory(session: Session | None) -> TraceFactory | None:
    """The audit trace lives beside the session file (`<id>.trace.jsonl`)."""
    if session is None:
        return None
    from assembler.sessions.trace import TraceWriter

    trace_path = session.trace_path

    def factory(sources: Mapping[str, str]) -> TraceWriter:
        return TraceWriter(trace_path, sources)

    return factory
