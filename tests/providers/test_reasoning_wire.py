"""Reasoning models and long outputs on the wire (loopback servers of `wire.modeled`):
Anthropic thinking blocks survive a three-turn tool loop byte for byte (the server
refuses a request whose block changed, as the API does); OpenAI-compatible
`reasoning_content` streams as reasoning, never as the answer, and is not sent back;
a reply cut at `max_tokens` inside a tool call never runs; a token budget lowers each
request's `max_tokens` on the wire."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from wire.anthropic_server import AnthropicServer
from wire.modeled import Say, anthropic_responder, openai_responder, replies, sign
from wire.openai_server import OpenAIServer

from assembler.agent import build_agent
from assembler.runner.cuts import CUT_NOTE
from assembler.runner.events import (
    Event,
    ReasoningEvent,
    RunEnd,
    ToolCallResult,
    UsageEvent,
)
from assembler.sessions.store import SessionStore
from assembler.validation.load import load_manifest


def manifest(tmp_path: Path, model: str, tools: str = "[read]", limits: str = "") -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "notes.txt").write_text("alpha\nbeta\n", "utf-8")
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: thinker\nworkspace: work\nidentity: You read files.\n"
        f"model: {model}\n"
        f"tools: {{sets: [{{builtin: {tools}}}]}}\n"
        f"limits: {{max_turns: 8{limits}}}\n",
        "utf-8",
    )
    return path


def run(path: Path, *, session_dir: Path | None = None) -> list[Event]:
    agent = build_agent(
        load_manifest(path),
        record_session=session_dir is not None,
        session_dir=session_dir,
        env={},
    )

    async def go() -> list[Event]:
        async with agent:
            return [event async for event in agent.stream("Read notes.txt three times.")]

    return asyncio.run(go())


THOUGHTS = [
    "The user wants notes.txt; I will read it.",
    "Read once. A second read, as asked.",
    "Twice. One more read, then I answer.",
]


def test_thinking_blocks_survive_a_three_turn_tool_loop_byte_for_byte(tmp_path: Path) -> None:
    script = replies(
        *(
            Say(thinking=thought, calls=[(f"toolu_{n}", "read", {"path": "notes.txt"})])
            for n, thought in enumerate(THOUGHTS, start=1)
        ),
        Say(thinking="All three reads done.", text="notes.txt holds alpha and beta."),
    )
    model = (
        "{provider: anthropic, name: claude-sonnet-4-5, base_url: '%s', "
        "max_tokens: 16000, thinking: {budget_tokens: 4000}}"
    )
    sessions = tmp_path / "sessions"
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(script))
        events = run(manifest(tmp_path, model % server.base_url), session_dir=sessions)

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed", end
    assert end.text == "notes.txt holds alpha and beta."  # thinking is never the answer
    streamed = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert streamed == "".join([*THOUGHTS, "All three reads done."])
    bodies = server.bodies
    assert len(bodies) == 4
    assert all(body["thinking"] == {"type": "enabled", "budget_tokens": 4000} for body in bodies)
    for turn, body in enumerate(bodies[1:], start=1):
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert len(assistants) == turn
        for thought, message in zip(THOUGHTS, assistants, strict=False):
            first = {k: v for k, v in message["content"][0].items() if k != "cache_control"}
            assert first == {"type": "thinking", "thinking": thought, "signature": sign(thought)}
    # the session keeps them, signatures included, for a resumed run to send back
    (session_file,) = [p for p in sessions.glob("*.jsonl") if ".trace." not in p.name]
    stored = SessionStore(sessions).open(session_file.stem).messages()
    kept = [m.reasoning[0] for m in stored if getattr(m, "reasoning", ())]
    assert [(b.kind, b.text, b.signature) for b in kept[:3]] == [
        ("thinking", t, sign(t)) for t in THOUGHTS
    ]


def test_a_changed_thinking_block_is_refused_by_the_modeled_server(tmp_path: Path) -> None:
    """The check above can fail: the loopback server refuses what the API refuses."""
    from wire.modeled import thinking_error

    body: dict[str, Any] = {
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "edited", "signature": sign("original")},
                    {"type": "tool_use", "id": "t", "name": "read", "input": {}},
                ],
            },
        ],
    }
    refused = thinking_error(body)
    assert refused is not None and "signature" in str(refused)


def test_openai_reasoning_content_is_reasoning_not_the_answer(tmp_path: Path) -> None:
    script = replies(
        Say(thinking="Let me look first.", calls=[("call_1", "read", {"path": "notes.txt"})]),
        Say(thinking="It has two lines.", text="alpha, beta"),
    )
    model = "{provider: openai, name: o4-mini, base_url: '%s', reasoning_effort: high}"
    with OpenAIServer() as server:
        server.respond_with(openai_responder(script, quirks=True))
        events = run(manifest(tmp_path, model % server.base_url))

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed" and end.text == "alpha, beta"
    streamed = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert streamed == "Let me look first.It has two lines."
    first, second = server.bodies
    assert first["reasoning_effort"] == second["reasoning_effort"] == "high"
    assert "Let me look first." not in str(second["messages"])  # shown, never sent back


def test_a_reply_cut_inside_a_tool_call_on_the_wire_is_never_run(tmp_path: Path) -> None:
    """`max_tokens: 20`: the `write` call's arguments are cut twice (at 20, then 40
    tokens); the file is never written, and the model is told why."""
    long_call = [("toolu_w", "write", {"path": "big.txt", "content": "word " * 200})]
    script = replies(Say(calls=long_call), Say(calls=long_call), Say(text="I will split it."))
    model = "{provider: anthropic, name: claude-sonnet-4-5, base_url: '%s', max_tokens: 20}"
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(script))
        events = run(manifest(tmp_path, model % server.base_url, tools="[read, write]"))

    assert [body["max_tokens"] for body in server.bodies] == [20, 40, 20]
    assert not (tmp_path / "work" / "big.txt").exists()
    (result,) = [e for e in events if isinstance(e, ToolCallResult)]
    assert not result.executed and result.is_error and CUT_NOTE in result.content
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed"


def test_a_token_budget_lowers_max_tokens_on_the_wire(tmp_path: Path) -> None:
    """A model that would write 5,000 tokens per reply, a budget of 3,000: the first
    request asks for less than what is left, the reply stops there, and the run ends
    with reason `budget` before a request that cannot fit."""
    chatter = " ".join(["word"] * 5_000)
    script = replies(Say(text=chatter, calls=[("toolu_1", "read", {"path": "notes.txt"})]))
    model = "{provider: anthropic, name: claude-sonnet-4-5, base_url: '%s'}"
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(script))
        events = run(manifest(tmp_path, model % server.base_url, limits=", budget: {tokens: 3000}"))

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget", end
    usages = [e for e in events if isinstance(e, UsageEvent)]
    spent = end.usage.input_tokens + end.usage.output_tokens
    errors = [u.usage.input_tokens - (u.estimated_input_tokens or 0) for u in usages]
    assert spent <= 3_000 + max(0, errors[-1])
    assert all(body["max_tokens"] < 3_000 for body in server.bodies)
    assert end.budget is not None and end.budget["budget"] == "tokens"
