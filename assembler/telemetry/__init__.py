"""OpenTelemetry GenAI spans for agent runs, through `opentelemetry-api` only.

Three spans, named and attributed as the OpenTelemetry GenAI semantic conventions
say (`gen_ai.*`):

    invoke_agent <agent>      one per run (`AgentRunner.run`), INTERNAL
      chat <model>            one per model request, CLIENT
      execute_tool <tool>     one per tool call that reached the hooks, INTERNAL

Extension and permission decisions are span events on `execute_tool`
(`assembler.tool_call.blocked`, `assembler.tool_result.rewritten`). Prompts, messages,
tool arguments and results, and the reason given for a block (it may quote the
arguments), are recorded only when
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (OpenTelemetry's own switch;
`ASSEMBLER_OTEL_CONTENT=1` too).

The API is a no-op until the application (or `opentelemetry-instrument`) installs an
SDK's tracer provider. Without `opentelemetry-api` installed, `AgentTelemetry.create`
returns None and nothing is wrapped: tracing costs nothing. With it installed, the API
is imported at the first run, never at start-up. The audit trace
(`sessions/trace.py`) is unchanged and independent of this.

Modules: `state` (`AgentTelemetry`: what every span of one agent shares; imports no
OpenTelemetry), `hooks` (runs and tool calls, around the runner's hooks and from its
trace records), `provider` (model requests, around the provider), `otel` (the API
calls they share), `content` (messages in the conventions' JSON shapes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assembler.telemetry.state import (
    CONTENT_ALIAS,
    CONTENT_VARIABLE,
    AgentTelemetry,
    content_wanted,
    otel_installed,
)

if TYPE_CHECKING:
    from assembler.providers.base import ModelProvider
    from assembler.runner.hooks import RunnerHooks, ToolCallRecord
    from assembler.runner.parts import TraceSink

__all__ = [
    "CONTENT_ALIAS",
    "CONTENT_VARIABLE",
    "AgentTelemetry",
    "content_wanted",
    "otel_installed",
    "wrap_hooks",
    "wrap_provider",
    "wrap_trace",
]


def wrap_hooks(hooks: RunnerHooks, telemetry: AgentTelemetry) -> RunnerHooks:
    """`hooks` with an `invoke_agent` span per run and an `execute_tool` span per call
    around them; what they decide is unchanged."""
    # Imported here, for an agent that has telemetry: the modules that import
    # OpenTelemetry stay out of every command's start-up.
    from assembler.telemetry.hooks import TracedHooks

    return TracedHooks(hooks, telemetry)


def wrap_provider(provider: ModelProvider, telemetry: AgentTelemetry) -> ModelProvider:
    """`provider` with a `chat` span around every request it streams."""
    from assembler.telemetry.provider import TracedProvider  # as in `wrap_hooks`

    return TracedProvider(provider, telemetry)


def wrap_trace(trace: TraceSink | None, telemetry: AgentTelemetry) -> TraceSink:
    """The audit trace sink (or none), followed by the spans of the calls that never
    reached the hooks: refused by the permission rules, or not runnable at all."""
    from assembler.telemetry.hooks import span_for_unseen_call  # as in `wrap_hooks`

    def sink(record: ToolCallRecord) -> None:
        if trace is not None:
            trace(record)
        span_for_unseen_call(telemetry, record)

    return sink
