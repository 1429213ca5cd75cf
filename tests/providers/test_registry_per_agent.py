"""A provider an extension registers belongs to that agent only (issue 10).

Before, extensions registered into one process-wide table: after one agent's extension
added `echo`, every later build in the process had `echo` too, even with no extension,
and took it for a built-in provider.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assembler import Agent, build_agent, load_manifest
from assembler.errors import UnknownProviderError
from assembler.providers.registry import ProviderRegistry, known_providers

EXTENSION = """
from assembler.messages import AssistantMessage
from assembler.testing import FunctionModel

def setup(api, options):
    label = options["label"]

    def factory(config):
        return FunctionModel(lambda request: AssistantMessage(text=f"{label} {config.model}"))

    api.register_provider("echo", factory)
"""


def project(root: Path, *, label: str | None) -> Path:
    """An agent on `echo:parrot`; with a label, its own extension registers `echo`,
    without one, its extension registers nothing (so validation lets it through with a
    warning, and only the build can tell)."""
    root.mkdir()
    (root / "echo_ext.py").write_text(EXTENSION)
    (root / "quiet_ext.py").write_text("def setup(api, options):\n    pass\n")
    extensions = (
        f"extensions:\n  - path: echo_ext.py\n    options: {{label: {label}}}\n"
        if label
        else "extensions:\n  - path: quiet_ext.py\n"
    )
    manifest = root / "agent.yaml"
    manifest.write_text("version: 1\nname: echo\nidentity: x\nmodel: echo:parrot\n" + extensions)
    return manifest


def answer(agent: Agent) -> str:
    async def go() -> str:
        async with agent:
            return (await agent.prompt("hi")).text

    return asyncio.run(go())


def build(manifest: Path) -> Agent:
    return build_agent(load_manifest(manifest), trust=True, record_session=False, env={})


def test_a_later_build_without_the_extension_does_not_have_its_provider(tmp_path: Path) -> None:
    first = build(project(tmp_path / "a", label="A"))
    assert answer(first) == "A parrot"

    with pytest.raises(UnknownProviderError, match="unknown model provider 'echo'"):
        build(project(tmp_path / "b", label=None))
    assert "echo" not in known_providers()


def test_two_agents_keep_their_own_factory_for_the_same_name(tmp_path: Path) -> None:
    first = build(project(tmp_path / "a", label="A"))
    second = build(project(tmp_path / "b", label="B"))

    assert answer(second) == "B parrot"
    assert answer(first) == "A parrot"
    assert first.assembly.providers is not second.assembly.providers


def test_a_reload_starts_from_the_builtins_again(tmp_path: Path) -> None:
    agent = build(project(tmp_path / "a", label="A"))
    before = agent.assembly.providers

    agent.reload()

    assert agent.assembly.providers is not before
    assert "echo" in agent.assembly.providers
    assert set(agent.assembly.providers.names()) - set(ProviderRegistry.builtin().names()) == {
        "echo"
    }
