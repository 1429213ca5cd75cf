"""Prompt caching measured on the wire: a 20-turn session with tool calls, its usage
counted by loopback servers that cache as the real APIs do (`wire.modeled`), earns at
least 90% of its input tokens from the cache from turn 3 on, on both wires. The
Anthropic wire needs the agent's breakpoints for it; the OpenAI wire needs a prefix
that stays byte-identical from turn to turn."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from wire.anthropic_server import AnthropicServer
from wire.modeled import (
    AnthropicCache,
    OpenAICache,
    Say,
    anthropic_responder,
    openai_responder,
    replies,
)
from wire.openai_server import OpenAIServer

from assembler.agent import build_agent
from assembler.runner.events import Event, RunEnd, UsageEvent
from assembler.validation.load import load_manifest

TURNS = 20
IDENTITY = "\n".join(
    f"Rule {n}: read every file you are asked about with the read tool before you answer, "
    "and quote the lines that matter, with their numbers."
    for n in range(1, 120)
)


def manifest(tmp_path: Path, provider: str, model: str, base_url: str, cache: str = "") -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "notes.txt").write_text("alpha\nbeta\n", "utf-8")
    identity = "\n".join("  " + line for line in IDENTITY.splitlines())
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: reader\nworkspace: work\n"
        f"identity: |\n{identity}\n"
        f"model: {{provider: {provider}, name: {model}, base_url: '{base_url}'{cache}}}\n"
        "tools: {sets: [{builtin: [read]}]}\n"
        f"limits: {{max_turns: {TURNS + 2}}}\n",
        "utf-8",
    )
    return path


def script() -> Any:
    calls = [Say(calls=[(f"call_{n}", "read", {"path": "notes.txt"})]) for n in range(1, TURNS)]
    return replies(*calls, Say(text="Both lines are read."))


def run(path: Path) -> list[Event]:
    agent = build_agent(load_manifest(path), record_session=False, env={})

    async def go() -> list[Event]:
        async with agent:
            return [event async for event in agent.stream("Read notes.txt, again and again.")]

    return asyncio.run(go())


def cached_share(events: list[Event], from_turn: int) -> float:
    usages = [e.usage for e in events if isinstance(e, UsageEvent)][from_turn - 1 :]
    return sum(u.cache_read_tokens for u in usages) / sum(u.input_tokens for u in usages)


@pytest.mark.slow
def test_anthropic_twenty_turns_read_90_percent_from_the_cache(tmp_path: Path) -> None:
    cache = AnthropicCache()
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(script(), cache))
        events = run(manifest(tmp_path, "anthropic", "claude-sonnet-4-5", server.base_url))

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed" and end.turns == TURNS
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert len(usages) == TURNS
    assert usages[0].cache_read_tokens == 0 and usages[0].cache_write_tokens > 1024
    assert cached_share(events, from_turn=3) >= 0.9
    whole = sum(u.cache_read_tokens for u in usages) / sum(u.input_tokens for u in usages)
    assert end.to_dict()["cached_input_share"] == round(whole, 4) > 0.8
    # every request stays within the API's four breakpoints
    for body in server.bodies:
        marked = [b for b in body["tools"] if "cache_control" in b]
        marked += [b for b in body["system"] if "cache_control" in b]
        marked += [
            b
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if "cache_control" in b
        ]
        assert 1 <= len(marked) <= 4


def test_anthropic_without_breakpoints_nothing_is_cached(tmp_path: Path) -> None:
    """`model.cache: off`: the same session sends no markers and reads nothing."""
    with AnthropicServer() as server:
        server.respond_with(
            anthropic_responder(
                replies(
                    Say(calls=[("call_1", "read", {"path": "notes.txt"})]),
                    Say(calls=[("call_2", "read", {"path": "notes.txt"})]),
                    Say(text="Done."),
                )
            )
        )
        events = run(
            manifest(tmp_path, "anthropic", "claude-sonnet-4-5", server.base_url, ", cache: off")
        )

    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert len(usages) == 3
    assert all(u.cache_read_tokens == 0 and u.cache_write_tokens == 0 for u in usages)
    assert all("cache_control" not in str(body) for body in server.bodies)


@pytest.mark.slow
def test_openai_twenty_turns_read_90_percent_from_the_cache(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.respond_with(openai_responder(script(), OpenAICache()))
        events = run(manifest(tmp_path, "openai", "gpt-4o-mini", server.base_url))

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed" and end.turns == TURNS
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert usages[0].cache_read_tokens == 0
    assert cached_share(events, from_turn=3) >= 0.9
    # the prefix is byte-stable: every request starts with the previous one's messages
    bodies = server.bodies
    for before, after in itertools.pairwise(bodies):
        assert after["tools"] == before["tools"]
        assert after["messages"][: len(before["messages"])] == before["messages"]
