"""A session records the system prompt it sends, by section with sources, and the tool
schemas: once while they stay the same, again when they change (docs/sessions.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from assembler import build_agent, load_manifest
from assembler.testing import ScriptedModel, text
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.view.prompts import prompt_entries, prompt_view
from assembler.view.session_file import SessionFile


async def noop(arguments: Any, context: ToolContext) -> ToolResult:
    return ToolResult("ok")


def test_prompts_are_recorded_when_they_change(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "AGENTS.md").write_text("Run the tests with make.\n")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: recorder\n"
        "identity: You help.\n"
        "context: {team: blue}\n"
        "workspace: work\n"
        "tools: {sets: [read]}\n"
    )
    model = ScriptedModel([text("one"), text("two"), text("three")])
    agent = build_agent(load_manifest(manifest), provider=model, session_dir=tmp_path / "s")

    async def go() -> None:
        async with agent:
            await agent.prompt("first")
            await agent.prompt("second")  # the same prompt: not recorded again
            agent.registry.register(Tool("lint", "Lints the code.", {"type": "object"}, noop))
            await agent.prompt("third")

    asyncio.run(go())
    assert agent.session is not None
    records = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    prompts = [r for r in records if r.get("type") == "prompt"]
    assert len(prompts) == 2
    first, second = prompts
    whole = "\n\n".join(f"## {s['name']}\n{s['text']}" for s in first["sections"])
    assert whole == model.requests[0].system  # the sections are the prompt sent, whole
    assert [s["name"] for s in first["sections"]] == ["identity", "tools", "workspace"]
    identity = first["sections"][0]
    assert identity["sources"] == [f"{manifest}:3: identity", f"{manifest}:4: context"]
    assert "context file: AGENTS.md" in first["sections"][2]["sources"]
    assert [t["name"] for t in first["tools"]] == ["read"]
    assert first["tools"][0]["source"] == "builtin"
    assert [t["name"] for t in second["tools"]] == ["read", "lint"]
    # each prompt entry comes right before the request it describes
    kinds = [r.get("message", {}).get("role") or r["type"] for r in records[1:]]
    assert kinds.count("prompt") == 2
    assert kinds[kinds.index("prompt") + 1] == "assistant"

    view = SessionFile(agent.session.path)
    view.refresh()
    entries = prompt_entries(view)
    assert [turn for _, turn, _ in entries] == [1, 1]
    assert prompt_view(view, entries[0][0]).text == model.requests[0].system
    changed = prompt_view(view, entries[1][0])
    assert {s.name: s.change for s in changed.sections} == {
        "identity": "unchanged", "tools": "changed", "workspace": "unchanged"
    }  # fmt: skip
    assert "+- lint" in changed.sections[1].diff
    assert [(t.name, t.change) for t in changed.tools] == [("read", ""), ("lint", "added")]
