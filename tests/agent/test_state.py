"""`Agent.state()`: what every front end shows of an agent, read in one call (the
terminal's banner and `/session`, RPC `state` and `messages`, ACP's replay)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assembler.agent import Agent, build_agent
from assembler.messages import AssistantMessage, ToolResultMessage, UserMessage
from assembler.testing import ScriptedModel, text


def build(tmp_path: Path, model: ScriptedModel, **kw: object) -> Agent:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "notes.txt").write_text("hello\n")
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: state-test\nidentity: You help.\nworkspace: work\n"
        "tools:\n  sets: [readonly]\npermissions:\n  ask: [write]\n  default: deny\n",
        "utf-8",
    )
    return build_agent(path, provider=model, session_dir=tmp_path / "sessions", **kw)  # type: ignore[arg-type]


def test_a_new_agent_is_idle_with_nothing_said(tmp_path: Path) -> None:
    agent = build(tmp_path, ScriptedModel([]), permission_mode="accept-edits")
    state = agent.state()
    assert state.name == "state-test"
    assert state.model == agent.provider.name
    assert state.endpoint == ""
    assert state.workspace == (tmp_path / "work").resolve()
    assert state.session is agent.session and state.session is not None
    assert (state.parent_session, state.forked_from) == (None, None)
    assert state.streaming is False
    assert (state.steers, state.follow_ups) == ((), ())
    assert (state.context_tokens, state.messages, state.entry_ids) == (0, (), ())
    assert (state.permission_mode, state.permission_default) == ("accept-edits", "deny")
    asyncio.run(agent.aclose())


def test_after_a_run_it_holds_the_conversation_and_each_messages_entry(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            {
                "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
                "usage": {"input_tokens": 100, "output_tokens": 7},
            },
            {"text": "It says hello.", "usage": {"input_tokens": 150, "output_tokens": 5}},
        ]
    )
    agent = build(tmp_path, model)
    asyncio.run(agent.prompt("What do the notes say?"))
    agent.steer("then stop")
    agent.follow_up("and summarise")
    state = agent.state()
    kinds = [type(m) for m in state.messages]
    assert kinds == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]
    assert (state.usage.input_tokens, state.usage.output_tokens) == (250, 12)
    assert state.context_tokens == 150
    assert (state.steers, state.follow_ups) == (("then stop",), ("and summarise",))
    assert agent.session is not None
    recorded = {e.id: e for e in agent.session.entries() if e.type == "message"}
    assert state.entry_ids is not None and len(state.entry_ids) == 4
    for message, entry in zip(state.messages, state.entry_ids, strict=True):
        assert entry in recorded
        assert recorded[entry].payload["message"]["role"] == message.role
    assert state.permission_mode == "default"  # rules without a mode: asks are asked
    asyncio.run(agent.aclose())


def test_a_fork_names_where_it_came_from_and_no_session_gives_no_entries(tmp_path: Path) -> None:
    agent = build(tmp_path, ScriptedModel([text("one")]))
    asyncio.run(agent.prompt("first"))
    first = agent.state()
    assert first.entry_ids is not None and first.entry_ids[0] is not None
    original = agent.session
    assert original is not None
    agent.fork(first.entry_ids[0])
    forked = agent.state()
    assert forked.parent_session == original.id
    assert forked.forked_from == first.entry_ids[0]
    assert len(forked.messages) == 1
    asyncio.run(agent.aclose())

    unrecorded = build(tmp_path, ScriptedModel([text("two")]), record_session=False)
    asyncio.run(unrecorded.prompt("hi"))
    state = unrecorded.state()
    assert state.session is None and state.entry_ids is None and len(state.messages) == 2
    assert state.permission_mode == "default"
    asyncio.run(unrecorded.aclose())


def test_the_state_carries_the_cost_when_the_price_is_known(tmp_path: Path) -> None:
    from assembler.messages import Usage
    from assembler.pricing import Price
    from assembler.providers.scripted import ScriptStep

    step = ScriptStep(AssistantMessage(text="Hi."), usage=Usage(1_000, 100))
    unpriced = build(tmp_path, ScriptedModel([step]))
    assert unpriced.state().cost_usd is None
    asyncio.run(unpriced.aclose())
    agent = build(tmp_path, ScriptedModel([step]), price=Price(input=3, output=15))

    async def go() -> None:
        async with agent:
            async for _ in agent.stream("hi"):
                pass

    asyncio.run(go())
    assert agent.state().cost_usd == pytest.approx(1_000 * 3e-6 + 100 * 15e-6)
