"""`AgentTelemetry`: what every span of one agent shares, and the run in progress.

One per agent, made by `build_agent`. The hooks (runs, tool calls) and the provider
wrapper (model requests) both hold it: the run span they parent their spans to lives
here, passed explicitly rather than through the ambient context, so a span never
leaks into the caller's context across the runner's `yield`s.

This module never imports OpenTelemetry: `assembler.telemetry.wrap_hooks` and
`wrap_provider` load the modules that do, and only for an agent that has telemetry.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from assembler.messages import Usage
from assembler.pricing import Price

if TYPE_CHECKING:
    import asyncio

    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.util.types import AttributeValue

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""OpenTelemetry's own switch for GenAI content, as the Python GenAI instrumentations
read it: `true` (or `SPAN_ONLY`, `SPAN_AND_EVENT`) records prompts, messages, tool
arguments and results on spans."""
CONTENT_ALIAS = "ASSEMBLER_OTEL_CONTENT"
"""This project's earlier switch, kept: `1` records content too."""
_CONTENT_ON = frozenset({"true", "1", "span_only", "span_and_event"})


def content_wanted(env: Mapping[str, str]) -> bool:
    """Whether spans record content: off unless the user's environment says so (never
    a manifest: it must not decide to export its users' prompts)."""
    standard = env.get(CONTENT_VARIABLE, "").strip().lower()
    return standard in _CONTENT_ON or env.get(CONTENT_ALIAS, "").strip() == "1"


@cache
def otel_installed() -> bool:
    """Whether `opentelemetry-api` can be imported. Only the `opentelemetry` namespace
    package (no code of its own) is imported to find out."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):  # `opentelemetry` missing, or a broken entry
        return False


@dataclass
class RunState:
    """The run in progress: its span, its task, and what the requests reported."""

    span: Span
    context: Context
    task: asyncio.Task[Any] | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    error_type: str = ""
    answer: str = ""
    seen: set[int] = field(default_factory=set)
    """`id()` of the calls whose span the hooks made; the others get theirs from the
    trace record (a call the permissions refused, or one that could not run)."""


@dataclass
class AgentTelemetry:
    """Names and settings of one agent's spans; `run` is the run in progress."""

    agent_name: str
    provider_name: str
    model: str
    agent_description: str = ""
    server_address: str = ""
    server_port: int | None = None
    content: bool = False
    conversation: Callable[[], str | None] = lambda: None
    """The session id of the conversation (it changes on fork or switch), or None."""
    run: RunState | None = None
    tracer: Tracer | None = None
    """Asked of the global tracer provider at the first run (`otel.tracer`)."""
    price: Price | None = None
    """The model's price: spans carry `assembler.usage.cost_usd` when it is known."""

    @classmethod
    def create(
        cls,
        *,
        agent_name: str,
        provider_name: str,
        model: str,
        agent_description: str = "",
        endpoint: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AgentTelemetry | None:
        """Telemetry for one agent, or None when `opentelemetry-api` is not installed
        (then nothing is wrapped, and tracing costs nothing)."""
        if not otel_installed():
            return None
        address, port = _server(endpoint)
        return cls(
            agent_name=agent_name,
            provider_name=provider_name,
            model=model,
            agent_description=agent_description,
            server_address=address,
            server_port=port,
            content=content_wanted(env or {}),
        )

    def switch_model(self, provider_name: str, model: str, endpoint: str | None) -> None:
        """After a switch (`/model`): later spans name the new model and its server."""
        self.provider_name, self.model = provider_name, model
        self.server_address, self.server_port = _server(endpoint)

    def common(self) -> dict[str, AttributeValue]:
        """Attributes every span carries: provider, agent and conversation."""
        attributes: dict[str, AttributeValue] = {
            "gen_ai.provider.name": self.provider_name,
            "gen_ai.agent.name": self.agent_name,
        }
        conversation = self.conversation()
        if conversation:
            attributes["gen_ai.conversation.id"] = conversation
        return attributes


def _server(endpoint: str | None) -> tuple[str, int | None]:
    """`server.address` and `server.port` of a model endpoint (empty when unknown)."""
    if not endpoint:
        return "", None
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError:
        return "", None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    return parts.hostname or "", port
