"""The whole prompt of a small agent, and `SystemPromptProvider` bound to live objects."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.agent.build import build_agent
from assembler.manifest.model import Manifest
from assembler.prompt.binding import make_prompt_provider
from assembler.prompt.provider import SystemPromptProvider
from assembler.prompt.renderer import MemoryEntry
from assembler.resources.loader import ResourceLoader
from assembler.testing import ScriptedModel
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry
from assembler.validation.load import load_manifest


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


def make_tool(name: str, snippet: str = "", guidelines: tuple[str, ...] = ()) -> Tool:
    return Tool(
        name=name,
        description=f"The {name} tool, described at length for the schema only.",
        parameters={"type": "object", "properties": {}},
        execute=_noop,
        snippet=snippet,
        guidelines=guidelines,
        source="python:test",
    )


def write_skill(folder: Path, description: str, body: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {folder.name}\ndescription: {description}\n---\n{body}", "utf-8"
    )


@pytest.fixture
def small_agent(tmp_path: Path) -> Manifest:
    root = tmp_path / "agent"
    workspace = root / "shop"
    workspace.mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("# Shop\n\nRun `make test` before you report.\n", "utf-8")
    write_skill(workspace / "skills" / "refund", "Refund an order - check the payment first.", "R")
    write_skill(workspace / "skills" / "audit", "Audit the ledger.", "A")
    (root / "agent.yaml").write_text(
        textwrap.dedent(
            """\
            version: 1
            name: small
            identity: |

              You price parcels for the shop.
              Answer in cents.

            context:
              repository: shop
              currency: EUR
              rates: {standard: 499, per_kg: 150}
            workspace: shop
            tools:
              sets: []
              guidelines:
                - Quote in cents.
                - "   Quote   in cents.  "
                - Never ship unpaid orders.
                - ""
                - Quote in cents.
            skills: [shop/skills]
            """
        ),
        "utf-8",
    )
    return load_manifest(root / "agent.yaml")


MEMORIES = (
    MemoryEntry("answer-style", "user", "How the user wants answers.", "Short, in English."),
    MemoryEntry("eu-rates", "project", "Where the rates come from.", "The 2024 tariff.\nNo VAT."),
)


def small_provider(manifest: Manifest, registry: ToolRegistry) -> SystemPromptProvider:
    snapshot = ResourceLoader(manifest).reload()
    assert snapshot.diagnostics == ()
    return make_prompt_provider(manifest, snapshot, registry, memory=lambda: MEMORIES)


def small_registry(manifest: Manifest) -> ToolRegistry:
    tools = [
        make_tool(
            "quote_fee",
            "Quote the fee of a parcel\n   in cents",
            guidelines=("  Never ship unpaid orders. ", "Round started kilograms up."),
        ),
        make_tool("ship"),
    ]
    return ToolRegistry(tools, manifest.tools.guidelines)


def test_the_exact_prompt_of_a_small_agent(small_agent: Manifest) -> None:
    provider = small_provider(small_agent, small_registry(small_agent))
    workspace = small_agent.workspace.resolve()
    assert provider() == (
        "## identity\n"
        "You price parcels for the shop.\n"
        "Answer in cents.\n"
        'context: {"currency":"EUR","rates":{"per_kg":150,"standard":499},"repository":"shop"}\n'
        "\n"
        "## tools\n"
        "- quote_fee: Quote the fee of a parcel in cents\n"
        "- ship\n"
        "\n"
        "Guidelines:\n"
        "- Never ship unpaid orders.\n"
        "- Round started kilograms up.\n"
        "- Quote in cents.\n"
        "\n"
        "## workspace\n"
        f"{workspace}\n"
        "\n"
        "### AGENTS.md\n"
        "# Shop\n"
        "\n"
        "Run `make test` before you report.\n"
        "\n"
        "## skills\n"
        "Read a skill's file before you follow it.\n"
        "- **audit**: Audit the ledger. (file: `skills/audit/SKILL.md`)\n"
        "- **refund**: Refund an order - check the payment first."
        " (file: `skills/refund/SKILL.md`)\n"
        "\n"
        "## memory\n"
        "<relevant_memories>\n"
        "\n"
        "## answer-style (user)\n"
        "\n"
        "How the user wants answers.\n"
        "\n"
        "Short, in English.\n"
        "\n"
        "## eu-rates (project)\n"
        "\n"
        "Where the rates come from.\n"
        "\n"
        "The 2024 tariff.\n"
        "No VAT.\n"
        "\n"
        "</relevant_memories>"
    )


def test_the_provider_is_a_zero_argument_callable(small_agent: Manifest) -> None:
    provider = small_provider(small_agent, small_registry(small_agent))
    assert provider() == provider.render().text
    assert provider.renderer.cache_hits == 1


def test_registering_a_tool_changes_the_next_call(small_agent: Manifest) -> None:
    registry = small_registry(small_agent)
    provider = small_provider(small_agent, registry)
    renderer = provider.renderer
    before = provider()
    assert (renderer.cache_hits, renderer.cache_misses) == (0, 1)

    registry.register(make_tool("refund", "Refund an order", guidelines=("Refund in full.",)))
    after = provider()
    assert (renderer.cache_hits, renderer.cache_misses) == (0, 2)
    assert "- ship\n- refund: Refund an order\n\nGuidelines:\n" in after
    # guidelines: the tools' own first, in tool order, then the manifest's
    assert (
        "Guidelines:\n- Never ship unpaid orders.\n- Round started kilograms up.\n"
        "- Refund in full.\n- Quote in cents.\n\n## workspace\n"
    ) in after

    registry.remove("refund")
    assert provider() == before
    assert (renderer.cache_hits, renderer.cache_misses) == (1, 2)

    registry.register(make_tool("ship", "Ship a paid order"), replace=True)
    assert "\n- ship: Ship a paid order\n" in provider()
    assert renderer.cache_misses == 3


def test_removing_every_tool_leaves_none(small_agent: Manifest) -> None:
    registry = small_registry(small_agent)
    provider = small_provider(small_agent, registry)
    for name in registry.names():
        registry.remove(name)
    text = provider()
    assert "\n\n## tools\n(none)\n\n## workspace\n" in text
    assert "Guidelines:" not in text


def test_the_memory_source_is_read_on_every_call(small_agent: Manifest) -> None:
    selected: list[MemoryEntry] = []
    snapshot = ResourceLoader(small_agent).reload()
    provider = make_prompt_provider(
        small_agent, snapshot, small_registry(small_agent), memory=lambda: selected
    )
    assert "## memory" not in provider()
    selected.append(MEMORIES[1])
    assert provider().endswith(
        "\n\n## memory\n<relevant_memories>\n\n## eu-rates (project)\n\n"
        "Where the rates come from.\n\nThe 2024 tariff.\nNo VAT.\n\n</relevant_memories>"
    )
    selected.clear()
    assert "## memory" not in provider()
    assert provider.renderer.cache_hits == 1


def test_the_context_is_canonicalised_once_at_build(small_agent: Manifest) -> None:
    provider = small_provider(small_agent, small_registry(small_agent))
    assert (
        provider.context_json
        == '{"currency":"EUR","rates":{"per_kg":150,"standard":499},"repository":"shop"}'
    )


def test_each_agent_gets_its_own_renderer(small_agent: Manifest) -> None:
    one = build_agent(small_agent, provider=ScriptedModel(), trust=True, record_session=False)
    two = build_agent(small_agent, provider=ScriptedModel(), trust=True, record_session=False)
    assert one.parts.prompt.renderer is not two.parts.prompt.renderer
    one.system_prompt()
    one.system_prompt()
    assert one.parts.prompt.renderer.cache_hits == 1
    assert two.parts.prompt.renderer.cache_hits == 0


def test_a_tool_registered_mid_session_reaches_the_next_request(small_agent: Manifest) -> None:
    model = ScriptedModel(["first answer", "second answer"])
    agent = build_agent(small_agent, provider=model, trust=True, record_session=False)

    async def run() -> None:
        await agent.prompt("one")
        agent.registry.register(make_tool("refund", "Refund an order"))
        await agent.prompt("two")
        await agent.aclose()

    asyncio.run(run())
    first, second = (request.system for request in model.requests)
    assert "\n\n## tools\n(none)\n\n## workspace\n" in first
    catalog = (
        "\n\n## tools\n- refund: Refund an order\n\n"
        "Guidelines:\n- Quote in cents.\n- Never ship unpaid orders.\n\n## workspace\n"
    )
    assert catalog in second
    assert second.replace(catalog, "\n\n## tools\n(none)\n\n## workspace\n") == first
    assert [tool.name for tool in model.requests[0].tools] == []
    assert [tool.name for tool in model.requests[1].tools] == ["refund"]
