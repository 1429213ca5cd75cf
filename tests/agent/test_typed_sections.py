"""Section templates see the agent's parameter values on every request: the defaults,
values given at the build, and values a prompt binds (which stay for the next one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from assembler import build_agent
from assembler.testing import ScriptedModel, text

MANIFEST = """\
version: 1
name: typed-sections
identity: You review code.
parameters:
  area: {type: string, default: everything}
prompt:
  identity:
    template: |
      {{ identity }} Your area: {{ area }}.
"""


def _systems(
    tmp_path: Path, *prompts: tuple[str, dict[str, str] | None], **build: object
) -> list[str]:
    (tmp_path / "agent.yaml").write_text(MANIFEST, "utf-8")
    model = ScriptedModel([text("ok") for _ in prompts])
    agent = build_agent(tmp_path / "agent.yaml", provider=model, record_session=False, **build)  # type: ignore[arg-type]

    async def go() -> None:
        async with agent:
            for prompt, params in prompts:
                await agent.prompt(prompt, params=params)

    asyncio.run(go())
    return [request.system for request in model.requests]


def test_a_prompts_values_reach_the_section_templates_and_stay(tmp_path: Path) -> None:
    first, second = _systems(tmp_path, ("one", {"area": "fees"}), ("two", None))
    assert "Your area: fees." in first
    assert "Your area: fees." in second


def test_the_default_and_build_values(tmp_path: Path) -> None:
    (default,) = _systems(tmp_path, ("one", None))
    assert "Your area: everything." in default
    (built,) = _systems(tmp_path, ("one", None), params={"area": "parsing"})
    assert "Your area: parsing." in built
