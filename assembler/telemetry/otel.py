"""The OpenTelemetry API calls every span here shares: the tracer, starting a span,
recording a failure. The one module besides `hooks` and `provider` that imports
`opentelemetry`; `state.AgentTelemetry` loads them only when the API is installed.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from assembler.telemetry.state import AgentTelemetry
from assembler.version import __version__

__all__ = ["SCOPE", "SpanKind", "fail", "in_context", "start", "tracer"]

SCOPE = "agent-assembler"
"""The instrumentation scope the spans are reported under."""


def tracer(telemetry: AgentTelemetry) -> Tracer:
    """The agent's tracer, asked of the global provider at its first run: a provider
    the application sets up after building the agent is still the one used."""
    if telemetry.tracer is None:
        telemetry.tracer = trace.get_tracer(SCOPE, __version__)
    return telemetry.tracer


def start(
    telemetry: AgentTelemetry,
    name: str,
    *,
    kind: SpanKind,
    parent: Context | None,
    attributes: Mapping[str, AttributeValue],
) -> Span:
    """A span with the attributes every span carries (provider, agent, conversation),
    then `attributes`. Sampling-relevant ones are given at creation, as the
    conventions ask."""
    return tracer(telemetry).start_span(
        name,
        context=parent,
        kind=kind,
        attributes={**telemetry.common(), **attributes},
    )


def in_context(span: Span) -> Context:
    """A context whose current span is `span`: how children name their parent."""
    return trace.set_span_in_context(span)


def fail(span: Span, error_type: str) -> None:
    """`error.type` and an error status: how the conventions record a failure."""
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))
