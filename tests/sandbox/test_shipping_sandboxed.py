"""The shipping example still passes with its sandbox on: its own replay fixes the bug
and the tests run, confined, while a write outside the example is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

from escapes import needs_landlock, needs_seccomp

from assembler.agent.build import build_agent
from assembler.runner.events import RunEnd, ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call
from assembler.validation.load import load_manifest

pytestmark = [needs_landlock, needs_seccomp]


def events_of(agent: object, prompt: str) -> list[object]:
    async def go() -> list[object]:
        async with agent:  # type: ignore[attr-defined]
            return [event async for event in agent.stream(prompt)]  # type: ignore[attr-defined]

    return asyncio.run(go())


def test_the_shipping_replay_passes_confined(shipping: Path) -> None:
    manifest = load_manifest(shipping / "agents" / "shipping-fixer.yaml")
    assert manifest.sandbox is not None and manifest.sandbox.filesystem == "workspace-write"
    agent = build_agent(manifest, trust=True, record_session=False)
    events = events_of(agent, "The test for heavy parcels fails. Fix it.")
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed"
    bash = [e for e in events if isinstance(e, ToolCallResult) and e.call.name == "bash"]
    assert bash and all(
        r.details["sandbox"] == {"filesystem": "workspace-write", "network": "off"} for r in bash
    )
    assert bash[-1].details["exit_code"] == 0 and "OK" in bash[-1].content


def test_the_shipping_agent_cannot_write_beside_its_example(shipping: Path) -> None:
    outside = shipping / "agents" / "planted.txt"
    model = ScriptedModel([tool_call("bash", command=f"echo x > {outside}"), text("Tried.")])
    manifest = load_manifest(shipping / "agents" / "shipping-fixer.yaml")
    agent = build_agent(manifest, provider=model, trust=True, record_session=False)
    events = events_of(agent, "Write a file beside the example.")
    [result] = [e for e in events if isinstance(e, ToolCallResult)]
    assert result.is_error and "Permission denied" in result.content
    assert "[sandbox:" in result.content
    assert not outside.exists()
