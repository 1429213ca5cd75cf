"""OpenTelemetry GenAI spans of real runs, read back from the SDK's in-memory exporter:
`invoke_agent` per run, `chat` per model request, `execute_tool` per tool call, with
the conventions' attributes, decisions as events, and content only on request."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once
from wire.openai_server import OpenAIServer, stream

from assembler.agent.build import build_agent
from assembler.pricing import Price
from assembler.runner.events import RunEnd
from assembler.telemetry import otel_installed
from assembler.testing import ScriptedModel, reply, text, tool_call
from assembler.validation.load import load_manifest

SCRIPT = """\
- text: Looking.
  tool_calls:
    - {id: call_1, name: read, arguments: {path: notes.txt}}
  usage: {input_tokens: 120, output_tokens: 7, cache_read_tokens: 100}
- text: The notes say hello.
  usage: {input_tokens: 150, output_tokens: 9}
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


def project(tmp_path: Path, *, extensions: dict[str, str] | None = None) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    (tmp_path / "replies.yaml").write_text(SCRIPT)
    entries = ""
    for name, source in (extensions or {}).items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        entries += f"  - path: {name}.py\n"
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: notes-reader\ndescription: Reads the notes.\n"
        "identity: You read notes with `read`.\nmodel: scripted:replies.yaml\nworkspace: ws\n"
        "tools:\n  sets:\n    - builtin: [read, write]\n"
        + (f"extensions:\n{entries}" if entries else "")
    )
    return manifest


def run(manifest: Path, tmp_path: Path, **options: Any) -> tuple[list[Any], str]:
    agent = build_agent(
        load_manifest(manifest), session_dir=tmp_path / "sessions", trust=True, **options
    )

    async def go() -> list[Any]:
        async with agent:
            return [event async for event in agent.stream("What do the notes say?")]

    events = asyncio.run(go())
    assert agent.session is not None
    return events, agent.session.id


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_run_is_one_invoke_agent_span_with_chat_and_execute_tool_children(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    events, session_id = run(project(tmp_path), tmp_path)
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"
    spans = by_name(exporter)
    assert sorted(spans) == ["chat replies.yaml", "execute_tool read", "invoke_agent notes-reader"]
    (agent,) = spans["invoke_agent notes-reader"]
    chats = sorted(spans["chat replies.yaml"], key=lambda s: s.start_time or 0)
    (tool,) = spans["execute_tool read"]
    assert len(chats) == 2

    assert agent.kind is SpanKind.INTERNAL and agent.parent is None
    assert agent.status.status_code is StatusCode.UNSET
    assert attrs(agent) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "scripted",
        "gen_ai.agent.name": "notes-reader",
        "gen_ai.agent.description": "Reads the notes.",
        "gen_ai.conversation.id": session_id,
        "gen_ai.request.model": "replies.yaml",
        "assembler.run.reason": "completed",
        "gen_ai.usage.input_tokens": 270,
        "gen_ai.usage.output_tokens": 16,
        "gen_ai.usage.cache_read.input_tokens": 100,
    }
    for child in (*chats, tool):
        assert child.parent is not None
        assert child.parent.span_id == agent.context.span_id
        assert child.context.trace_id == agent.context.trace_id

    first = attrs(chats[0])
    assert chats[0].kind is SpanKind.CLIENT
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "replies.yaml"
    assert first["gen_ai.provider.name"] == "scripted"
    assert first["gen_ai.conversation.id"] == session_id
    assert first["gen_ai.request.stream"] is True
    assert first["gen_ai.usage.input_tokens"] == 120
    assert first["gen_ai.usage.output_tokens"] == 7
    assert first["gen_ai.usage.cache_read.input_tokens"] == 100
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["gen_ai.response.time_to_first_chunk"] >= 0
    assert attrs(chats[1])["gen_ai.usage.input_tokens"] == 150

    assert attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.provider.name": "scripted",
        "gen_ai.agent.name": "notes-reader",
        "gen_ai.conversation.id": session_id,
        "gen_ai.tool.name": "read",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
    }
    assert tool.status.status_code is StatusCode.UNSET
    # The tool ran between the two requests.
    assert chats[0].end_time is not None and tool.start_time is not None
    assert chats[0].end_time <= tool.start_time
    assert tool.end_time is not None and chats[1].start_time is not None
    assert tool.end_time <= chats[1].start_time


def test_cost_is_on_every_chat_span_and_the_run_when_the_price_is_known(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """$3 / $15 per million, cache reads at $0.30: the first request (120 in, 100 of
    them cached, 7 out) costs 20 * 3 + 100 * 0.3 + 7 * 15 = 195 millionths of a dollar,
    the second (150 in, 9 out) 585 millionths."""
    price = Price(input=3, output=15, cache_read=0.3)
    events, _ = run(project(tmp_path), tmp_path, price=price)
    end = events[-1]
    assert isinstance(end, RunEnd) and end.cost_usd == pytest.approx(780e-6)
    spans = by_name(exporter)
    chats = sorted(spans["chat replies.yaml"], key=lambda s: s.start_time or 0)
    assert [attrs(c)["assembler.usage.cost_usd"] for c in chats] == [0.000195, 0.000585]
    (agent,) = spans["invoke_agent notes-reader"]
    assert attrs(agent)["assembler.usage.cost_usd"] == 0.00078


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},  # no span content
        {"ASSEMBLER_OTEL_CONTENT": "yes"},  # the alias is `1` only, as it always was
    ],
)
def test_no_content_is_recorded_unless_asked(
    tmp_path: Path, exporter: InMemorySpanExporter, env: dict[str, str]
) -> None:
    run(project(tmp_path), tmp_path, env=env)
    recorded = json.dumps([attrs(s) for s in exporter.get_finished_spans()])
    for secret in ("hello", "notes.txt", "What do the notes say", "You read notes"):
        assert secret not in recorded


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
        {"ASSEMBLER_OTEL_CONTENT": "1"},  # the earlier switch, kept as an alias
    ],
)
def test_content_is_recorded_with_the_standard_switch_or_its_alias(
    tmp_path: Path, exporter: InMemorySpanExporter, env: dict[str, str]
) -> None:
    run(project(tmp_path), tmp_path, env=env)
    spans = by_name(exporter)
    agent = attrs(spans["invoke_agent notes-reader"][0])
    assert json.loads(agent["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "What do the notes say?"}]}
    ]
    assert json.loads(agent["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "The notes say hello."}]}
    ]
    chats = sorted(spans["chat replies.yaml"], key=lambda s: s.start_time or 0)
    system = json.loads(attrs(chats[0])["gen_ai.system_instructions"])
    assert system[0]["type"] == "text" and system[0]["content"].startswith("## identity\n")
    assert json.loads(attrs(chats[0])["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Looking."},
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "read",
                    "arguments": {"path": "notes.txt"},
                },
            ],
            "finish_reason": "tool_calls",
        }
    ]
    second_input = json.loads(attrs(chats[1])["gen_ai.input.messages"])
    assert [m["role"] for m in second_input] == ["user", "assistant", "tool"]
    assert second_input[2]["parts"][0]["type"] == "tool_call_response"
    assert second_input[2]["parts"][0]["id"] == "call_1"
    assert "hello" in second_input[2]["parts"][0]["response"]
    tool = attrs(spans["execute_tool read"][0])
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"path": "notes.txt"}
    assert "hello" in tool["gen_ai.tool.call.result"]


BLOCK_WRITES = """
from assembler.extensions import Block

def setup(api, options):
    @api.on("tool_call")
    def guard(event):
        if event.name == "write":
            return Block("writes are not allowed here")
"""

SHOUT = """
from assembler.extensions import ResultPatch

def setup(api, options):
    @api.on("tool_result")
    def shout(event):
        return ResultPatch(content=event.result.content.upper())
"""


def test_blocks_and_rewrites_are_events_on_the_tool_span(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    manifest = project(tmp_path, extensions={"guard": BLOCK_WRITES, "shout": SHOUT})
    model = ScriptedModel(
        [
            tool_call("write", path="out.txt", content="x"),
            tool_call("read", path="notes.txt"),
            text("done"),
        ]
    )
    run(manifest, tmp_path, provider=model)
    assert not (tmp_path / "ws" / "out.txt").exists()
    spans = by_name(exporter)
    (write,) = spans["execute_tool write"]
    assert write.status.status_code is StatusCode.ERROR
    assert attrs(write)["error.type"] == "blocked"
    # The reason is content (issue 20, item 24): recorded only with the opt-in.
    assert [(e.name, dict(e.attributes or {})) for e in write.events] == [
        ("assembler.tool_call.blocked", {"assembler.blocked_by": "guard"})
    ]
    (read,) = spans["execute_tool read"]
    assert read.status.status_code is StatusCode.UNSET
    assert [(e.name, dict(e.attributes or {})) for e in read.events] == [
        ("assembler.tool_result.rewritten", {"assembler.rewritten_by": ("shout",)})
    ]
    # A ready provider is named by its own `provider:model` name.
    (agent,) = spans["invoke_agent notes-reader"]
    assert attrs(agent)["gen_ai.provider.name"] == "scripted"
    assert attrs(agent)["gen_ai.request.model"] == "test"


def test_a_failed_request_marks_the_chat_and_the_run(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([tool_call("read", path="notes.txt")])  # the second request fails
    events, _ = run(project(tmp_path), tmp_path, provider=model)
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "error"
    spans = by_name(exporter)
    chats = sorted(spans["chat test"], key=lambda s: s.start_time or 0)
    assert chats[0].status.status_code is StatusCode.UNSET
    assert chats[1].status.status_code is StatusCode.ERROR
    assert attrs(chats[1])["error.type"] == "ProviderError"
    (agent,) = spans["invoke_agent notes-reader"]
    assert agent.status.status_code is StatusCode.ERROR
    assert attrs(agent)["error.type"] == "ProviderError"
    assert attrs(agent)["assembler.run.reason"] == "error"


NESTED = """
from opentelemetry import trace

def setup(api, options):
    def lookup(topic: str) -> str:
        \"\"\"Look a topic up.\"\"\"
        with trace.get_tracer("test").start_as_current_span("inner work"):
            return "found " + topic

    api.register_tool(lookup)
"""


def test_spans_made_inside_a_tool_are_children_of_its_execute_tool_span(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    manifest = project(tmp_path, extensions={"nested": NESTED})
    model = ScriptedModel([tool_call("lookup", topic="fees"), text("done")])
    outer = trace.get_tracer("test").start_span("application")
    with trace.use_span(outer, end_on_exit=True):
        run(manifest, tmp_path, provider=model)
    spans = by_name(exporter)
    (inner,) = spans["inner work"]
    (tool,) = spans["execute_tool lookup"]
    (agent,) = spans["invoke_agent notes-reader"]
    (application,) = spans["application"]
    assert inner.parent is not None and inner.parent.span_id == tool.context.span_id
    assert agent.parent is not None and agent.parent.span_id == application.context.span_id
    # the tool's span never became the caller's current span
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_without_the_api_nothing_is_wrapped_and_runs_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("opentelemetry", "opentelemetry.trace"):  # as if it were not installed
        monkeypatch.setitem(sys.modules, name, None)
    otel_installed.cache_clear()
    try:
        agent = build_agent(
            load_manifest(project(tmp_path)), session_dir=tmp_path / "s", trust=True
        )
        assert type(agent.runner.provider).__name__ == "ScriptedProvider"
        assert type(agent.runner.parts.hooks).__name__ == "HookChain"

        async def go() -> list[Any]:
            async with agent:
                return [event async for event in agent.stream("go")]

        events = asyncio.run(go())
        assert isinstance(events[-1], RunEnd) and events[-1].reason == "completed"
    finally:
        otel_installed.cache_clear()


SLOW = """
import asyncio

def setup(api, options):
    async def wait(seconds: float) -> str:
        \"\"\"Wait.\"\"\"
        await asyncio.sleep(seconds)
        return "waited"

    api.register_tool(wait)
"""


def test_a_cancelled_run_ends_its_spans(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    manifest = project(tmp_path, extensions={"slow": SLOW})
    model = ScriptedModel([tool_call("wait", seconds=30), text("never")])
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, record_session=False)

    async def go() -> None:
        async with agent:
            consumer = asyncio.ensure_future(_drain(agent.stream("wait")))
            while not any(s.name == "chat test" for s in exporter.get_finished_spans()):
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # the tool is running now
            consumer.cancel()
            with pytest.raises(asyncio.CancelledError):
                await consumer

    asyncio.run(go())
    spans = by_name(exporter)
    (tool,) = spans["execute_tool wait"]
    assert attrs(tool)["error.type"] == "cancelled"
    (run_span,) = spans["invoke_agent notes-reader"]
    assert attrs(run_span)["assembler.run.reason"] == "cancelled"


async def _drain(stream: Any) -> None:
    async for _ in stream:
        pass


def test_an_openai_request_through_the_sdk(
    tmp_path: Path, exporter: InMemorySpanExporter, openai_server: OpenAIServer
) -> None:
    """A real SDK request to the loopback server: the provider, the server and the
    usage the server reported are on the `chat` span."""
    openai_server.add(stream("Hello", " there.", usage=(31, 4)))
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: greeter\nidentity: You greet.\n"
        f"model:\n  provider: openai\n  name: gpt-test\n  base_url: {openai_server.base_url}\n"
        "tools:\n  sets: []\n"
    )
    agent = build_agent(load_manifest(manifest), record_session=False)

    async def go() -> str:
        async with agent:
            return (await agent.prompt("hi")).text

    assert asyncio.run(go()) == "Hello there."
    (chat,) = by_name(exporter)["chat gpt-test"]
    host, port = openai_server.base_url.split("//")[1].split("/")[0].split(":")
    assert attrs(chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.agent.name": "greeter",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.request.stream": True,
        "server.address": host,
        "server.port": int(port),
        "gen_ai.response.time_to_first_chunk": attrs(chat)["gen_ai.response.time_to_first_chunk"],
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 31,
        "gen_ai.usage.output_tokens": 4,
    }


def test_permission_decisions_are_on_the_tool_spans(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """The rules decide before any hook runs: a denied call still has its span, with
    the rule that refused it; an allowed one names the rule that allowed it."""
    manifest = project(tmp_path)
    manifest.write_text(
        manifest.read_text() + 'permissions:\n  allow: [read]\n  deny: ["write(*.txt)"]\n'
    )
    model = ScriptedModel(
        [
            reply(
                tool_call("write", path="out.txt", content="x"),
                tool_call("read", path="notes.txt"),
                tool_call("nonexistent"),
            ),
            text("done"),
        ]
    )
    run(manifest, tmp_path, provider=model)
    assert not (tmp_path / "ws" / "out.txt").exists()
    spans = by_name(exporter)
    (agent,) = spans["invoke_agent notes-reader"]
    (write,) = spans["execute_tool write"]
    assert write.parent is not None and write.parent.span_id == agent.context.span_id
    assert attrs(write)["error.type"] == "blocked"
    assert attrs(write)["assembler.permission.rule"] == "write(*.txt)"
    (event,) = write.events
    assert event.name == "assembler.tool_call.blocked"
    assert dict(event.attributes or {})["assembler.blocked_by"] == "permissions"
    assert dict(event.attributes or {})["assembler.permission.rule"] == "write(*.txt)"
    (read,) = spans["execute_tool read"]
    assert read.status.status_code is StatusCode.UNSET
    assert attrs(read)["assembler.permission.decided_by"] == "rule"
    assert attrs(read)["assembler.permission.rule"] == "read"
    (missing,) = spans["execute_tool nonexistent"]
    assert attrs(missing)["error.type"] == "not_run"


def test_spans_after_a_model_switch_name_the_new_model(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """`/model` (Agent.set_model): the next run's spans carry the model it switched to."""
    manifest = project(tmp_path)
    (tmp_path / "second.yaml").write_text("- text: Switched.\n")
    agent = build_agent(load_manifest(manifest), session_dir=tmp_path / "sessions", trust=True)

    async def go() -> None:
        async with agent:
            await agent.set_model(f"scripted:{tmp_path / 'second.yaml'}")
            async for _ in agent.stream("And now?"):
                pass

    asyncio.run(go())
    spans = by_name(exporter)
    (run,) = spans["invoke_agent notes-reader"]
    assert attrs(run)["gen_ai.request.model"].endswith("second.yaml")
    (chat,) = [s for name, group in spans.items() if name.startswith("chat") for s in group]
    assert chat.name.endswith("second.yaml"), chat.name
    assert attrs(chat)["gen_ai.request.model"].endswith("second.yaml")
