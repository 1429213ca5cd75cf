"""`chat` spans: a provider wrapper that times each streamed model request.

The span covers the whole request as the caller sees it, from the call until the
last event (the SDK's own retries included), as the conventions ask. It is a child of
the run's `invoke_agent` span when a run is in progress (a compaction summary too),
else of the ambient context. The tokens each response reports are added to the run's
totals, which `invoke_agent` carries at its end.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from opentelemetry import context
from opentelemetry.trace import Span

from assembler.messages import ModelRequest, ResponseDone, StreamEvent
from assembler.providers.base import ModelProvider
from assembler.telemetry.content import input_messages, output_messages, system_instructions
from assembler.telemetry.otel import SpanKind, fail, start
from assembler.telemetry.state import AgentTelemetry

__all__ = ["COST_ATTRIBUTE", "TracedProvider"]

COST_ATTRIBUTE = "assembler.usage.cost_usd"
"""What a request (on `chat`) or a run (on `invoke_agent`) cost, in US dollars, from
the model's price; absent when the price is unknown (GenAI conventions have no cost
attribute yet)."""


class TracedProvider:
    """`inner`, unchanged, with a `chat <model>` span around every request."""

    def __init__(self, inner: ModelProvider, telemetry: AgentTelemetry) -> None:
        self.inner = inner
        self.telemetry = telemetry

    @property
    def name(self) -> str:
        return self.inner.name

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        span = self._start(request)
        started = time.perf_counter()
        first = True
        try:
            async for event in self.inner.stream(request):
                if first:
                    first = False
                    span.set_attribute(
                        "gen_ai.response.time_to_first_chunk", time.perf_counter() - started
                    )
                if isinstance(event, ResponseDone):
                    self._done(span, event)
                yield event
        except GeneratorExit:  # the caller stopped reading: not the model's failure
            fail(span, "cancelled")
            raise
        except BaseException as e:
            fail(span, type(e).__name__)
            run = self.telemetry.run
            if run is not None:
                run.error_type = type(e).__name__
            raise
        finally:
            span.end()

    def _start(self, request: ModelRequest) -> Span:
        telemetry = self.telemetry
        model = telemetry.model or request.model  # a ready provider sends its `provider:model`
        attributes: dict[str, str | int | float | bool] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.request.stream": True,
        }
        settings = request.settings
        if settings.temperature is not None:
            attributes["gen_ai.request.temperature"] = settings.temperature
        if settings.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = settings.max_tokens
        if telemetry.server_address:
            attributes["server.address"] = telemetry.server_address
            if telemetry.server_port is not None:
                attributes["server.port"] = telemetry.server_port
        run = telemetry.run
        span = start(
            telemetry,
            f"chat {model}",
            kind=SpanKind.CLIENT,
            parent=run.context if run is not None else context.get_current(),
            attributes=attributes,
        )
        if telemetry.content and span.is_recording():
            span.set_attribute("gen_ai.system_instructions", system_instructions(request.system))
            span.set_attribute("gen_ai.input.messages", input_messages(request.messages))
        return span

    def _done(self, span: Span, done: ResponseDone) -> None:
        usage = done.usage
        run = self.telemetry.run
        price = self.telemetry.price
        cost = price.cost(usage) if price is not None else None
        if run is not None:
            run.usage = run.usage + usage
            run.cost += cost or 0.0
        if not span.is_recording():
            return
        if cost is not None:
            span.set_attribute(COST_ATTRIBUTE, round(cost, 6))
        span.set_attribute("gen_ai.response.finish_reasons", [done.stop_reason or "stop"])
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        if usage.cache_read_tokens:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
        if usage.cache_write_tokens:
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
        if self.telemetry.content:
            span.set_attribute(
                "gen_ai.output.messages", output_messages(done.message, done.stop_reason)
            )
