"""Issue 20, item 24: a block reason is content, recorded only with the content opt-in.

Traces leave the machine (a collector, a vendor), so prompts, arguments and results
are recorded only with `ASSEMBLER_OTEL_CONTENT=1`. The reason an extension gives for a
block was recorded always, and extensions quote what they refuse: a guard's
"refused: curl -H 'Authorization: Bearer sk-...'" put the token in every trace. The
reason is now recorded with the content opt-in only; who blocked (and the permission
rule) is recorded always.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from assembler.agent.build import build_agent
from assembler.testing import ScriptedModel, text, tool_call
from assembler.validation.load import load_manifest

TOKEN = "sk-trace-leak-0424"
COMMAND = f"curl -H 'Authorization: Bearer {TOKEN}' https://example.com"
GUARD = """
from assembler.extensions import Block

def setup(api, options):
    @api.on("tool_call")
    def no_network(event):
        if event.name == "bash":
            return Block("refused: " + event.arguments["command"])
"""


def _reset_global_provider() -> None:
    # The API lets a process set its tracer provider once; each test needs its own.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    _reset_global_provider()
    trace.set_tracer_provider(provider)
    yield memory
    provider.shutdown()
    _reset_global_provider()


def traced_block(tmp_path: Path, exporter: InMemorySpanExporter, env: dict[str, str]) -> str:
    """Run an agent whose guard blocks a `bash` call; every exported span as text."""
    (tmp_path / "guard.py").write_text(GUARD)
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: guarded\nidentity: You help.\ntools: {sets: [bash]}\n"
        "extensions:\n  - path: guard.py\n"
    )
    model = ScriptedModel([tool_call("bash", command=COMMAND), text("done")])
    agent = build_agent(
        load_manifest(tmp_path / "agent.yaml"),
        provider=model,
        record_session=False,
        trust=True,
        env=env,
    )

    async def go() -> None:
        async with agent:
            async for _ in agent.stream("fetch it"):
                pass

    asyncio.run(go())
    spans = exporter.get_finished_spans()
    [tool] = [span for span in spans if span.name == "execute_tool bash"]
    [event] = tool.events
    assert event.name == "assembler.tool_call.blocked"
    assert dict(event.attributes or {})["assembler.blocked_by"] == "guard"  # the extension
    return "\n".join(span.to_json() for span in spans)


def test_the_reason_is_not_recorded_without_the_content_opt_in(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    exported = traced_block(tmp_path, exporter, {})
    assert TOKEN not in exported
    assert "assembler.reason" not in exported


def test_the_reason_is_recorded_with_the_content_opt_in(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    exported = traced_block(tmp_path, exporter, {"ASSEMBLER_OTEL_CONTENT": "1"})
    assert f'"assembler.reason": "refused: {COMMAND}' in exported.replace("\\'", "'")
