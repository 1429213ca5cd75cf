"""Memory in a running agent: exactly once per request, in both injection modes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble
from wire.openai_server import OpenAIServer, stream

from assembler.agent.build import build_agent
from assembler.memory.records import make_record
from assembler.memory.store import MemoryStore
from assembler.messages import ContextMessage, ModelRequest, UserMessage
from assembler.testing import ScriptedModel, text, tool_call
from assembler.validation.load import load_manifest

DEPLOY_BODY = "Never deploy on Friday afternoons; the release train freezes at noon."
TEA_BODY = "The user prefers tea over coffee and says so often."
TESTS_BODY = "Run the tests with python3 -m unittest discover."
BLOCK = (
    "<relevant_memories>\n\n## deploy-window (project)\n\nWhen deploys may happen\n\n"
    + DEPLOY_BODY
    + "\n\n</relevant_memories>"
)


def project(
    tmp_path: Path, injection: str = "system", strategy: str = "keyword", model: str = ""
) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: remembering\nidentity: You help the release team.\nworkspace: ws\n"
        "tools:\n  sets: [read]\n"
        + (f"model:\n{model}" if model else "")
        + f"memory:\n  selection: {{strategy: {strategy}, max_records: 1}}\n  injection: {injection}\n"
    )
    return manifest


def seed(tmp_path: Path) -> MemoryStore:
    store = MemoryStore.open(tmp_path / "ws" / ".assembler" / "memory")
    store.add(make_record("deploy-window", "When deploys may happen", "project", DEPLOY_BODY))
    store.add(make_record("drinks", "What the user likes to drink", "user", TEA_BODY))
    store.add(make_record("test-command", "How to run the test suite", "reference", TESTS_BODY))
    return store


def request_text(request: ModelRequest) -> str:
    parts = [request.system]
    for message in request.messages:
        parts.append(getattr(message, "content", "") or getattr(message, "text", ""))
    return "\n".join(parts)


def run_once(manifest: Path, model: ScriptedModel, prompt: str) -> Any:
    agent = build_agent(load_manifest(manifest), provider=model, record_session=False)

    async def go() -> None:
        async with agent:
            await agent.prompt(prompt)

    asyncio.run(go())
    return agent


@pytest.mark.parametrize("injection", ["system", "message"])
def test_selected_memory_reaches_the_model_exactly_once(tmp_path: Path, injection: str) -> None:
    seed(tmp_path)
    model = ScriptedModel([tool_call("read", path="x"), text("Not on Friday.")])
    run_once(project(tmp_path, injection), model, "When can we deploy the release?")
    for request in model.requests:  # both requests of the turn, not just the first
        assert request_text(request).count(DEPLOY_BODY) == 1
        assert request_text(request).count(BLOCK) == 1  # the whole block, exactly once
        assert request_text(request).count("<relevant_memories>") == 1
        assert request_text(request).count("</relevant_memories>") == 1
        assert TEA_BODY not in request_text(request) and TESTS_BODY not in request_text(request)
    first = model.requests[0]
    if injection == "system":
        assert first.system.endswith("\n\n## memory\n" + BLOCK)
        assert [type(m) for m in first.messages] == [UserMessage]
    else:
        assert "## memory" not in first.system
        assert [type(m) for m in first.messages] == [UserMessage, ContextMessage]
        assert first.messages[1].content == BLOCK  # type: ignore[union-attr]


def test_system_mode_sends_one_message_fewer_than_message_mode(tmp_path: Path) -> None:
    sizes = {}
    for injection in ("system", "message"):
        root = tmp_path / injection
        root.mkdir()
        seed(root)
        model = ScriptedModel([text("ok")])
        run_once(project(root, injection), model, "When can we deploy?")
        sizes[injection] = len(model.requests[0].messages)
    assert sizes["message"] == sizes["system"] + 1


@pytest.mark.parametrize("injection", ["system", "message"])
def test_exactly_once_on_the_wire(
    tmp_path: Path, injection: str, openai_server: OpenAIServer
) -> None:
    seed(tmp_path)
    openai_server.add(stream("Not on Friday."))
    model = f"  provider: openai\n  name: gpt-test\n  base_url: {openai_server.base_url}\n"
    manifest = project(tmp_path, injection, model=model)
    agent = build_agent(load_manifest(manifest), record_session=False)

    async def go() -> None:
        async with agent:
            await agent.prompt("When can we deploy?")

    asyncio.run(go())
    body = openai_server.bodies[0]
    sent = json.dumps(body, ensure_ascii=False)
    assert sent.count(DEPLOY_BODY) == 1
    assert sent.count("<relevant_memories>") == sent.count("</relevant_memories>") == 1
    roles = [m["role"] for m in body["messages"]]
    assert roles == (["system", "user"] if injection == "system" else ["system", "user", "user"])


def test_a_new_selection_misses_the_render_cache(tmp_path: Path) -> None:
    seed(tmp_path)
    model = ScriptedModel([text("a"), text("b"), text("c")])
    agent = build_agent(load_manifest(project(tmp_path)), provider=model, record_session=False)
    renderer = agent.parts.prompt.renderer

    async def go() -> None:
        async with agent:
            await agent.prompt("When can we deploy?")
            await agent.prompt("When can we deploy?")
            misses = renderer.cache_misses
            await agent.prompt("What does the user like to drink, tea or coffee?")
            assert renderer.cache_misses == misses + 1

    asyncio.run(go())
    first, second, third = model.requests
    assert first.system == second.system
    assert (
        DEPLOY_BODY in first.system and TEA_BODY in third.system and DEPLOY_BODY not in third.system
    )


def test_remembered_records_persist_into_the_next_session(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    model = ScriptedModel(
        [
            tool_call(
                "remember", name="standup", description="When the daily standup is",
                type="project", body="The standup is at 9:30 in room Kepler.",
            ),
            text("Noted."),
        ]
    )  # fmt: skip
    run_once(manifest, model, "Remember: standup is 9:30 in Kepler.")
    assert "remember" in [t.name for t in model.requests[0].tools]
    stored = (tmp_path / "ws" / ".assembler" / "memory" / "standup.md").read_text()
    assert "The standup is at 9:30 in room Kepler." in stored
    later = ScriptedModel([text("9:30")])
    run_once(manifest, later, "When is the standup?")
    assert "The standup is at 9:30 in room Kepler." in later.requests[0].system


def test_model_selection_with_a_bad_answer_selects_nothing_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    seed(tmp_path)
    model = ScriptedModel([text("not json at all"), text("Answer without memory.")])
    agent = build_agent(
        load_manifest(project(tmp_path, strategy="model")), provider=model, record_session=False
    )

    async def go() -> list[Any]:
        async with agent:
            return [e async for e in agent.stream("When can we deploy?")]

    events = asyncio.run(go())
    assert events[-1].reason == "completed"
    assert "## memory" not in model.requests[1].system
    assert any(e.kind == "diagnostic" for e in events)


def test_render_dry_run_input_shows_the_selection_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = seed(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in store.path.rglob("*")}
    result = assemble(
        capsys, "render", "--dry-run", str(project(tmp_path)), "--input", "When can we deploy?"
    )
    assert result.code == 0, result.err
    assert (
        "---- selected memories (1) ----\ndeploy-window (project): When deploys may happen"
        in result.out
    )
    assert "\n\n## memory\n" + BLOCK + "\n" in result.out
    assert {p: p.stat().st_mtime_ns for p in store.path.rglob("*")} == before


def test_render_dry_run_with_no_store_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "render", "--dry-run", str(project(tmp_path)), "--input", "hello")
    assert result.code == 0, result.err
    assert not (tmp_path / "ws" / ".assembler").exists()
    assert "- remember:" in result.out


def test_memory_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = str(project(tmp_path))
    assert "no memories" in assemble(capsys, "memory", "list", manifest).out
    added = assemble(
        capsys, "memory", "add", manifest, "--name", "style", "--description", "Code style",
        "--type", "feedback", "--body", "Prefer small functions.",
    )  # fmt: skip
    assert added.code == 0 and added.out == "added style\n"
    assert assemble(capsys, "memory", "list", manifest).out == "style\tfeedback\tCode style\n"
    shown = assemble(capsys, "memory", "show", manifest, "style").out
    assert shown.startswith("---\n") and "Prefer small functions." in shown
    duplicate = assemble(
        capsys, "memory", "add", manifest, "--name", "style", "--description", "x", "--body", "y"
    )
    assert duplicate.code == 1
    bad = assemble(
        capsys, "memory", "add", manifest, "--name", "Bad Name", "--description", "x", "--body", "y"
    )
    assert bad.code == 1 and "name" in bad.err
    assert assemble(capsys, "memory", "remove", manifest, "style").out == "removed style\n"
    missing = assemble(capsys, "memory", "remove", manifest, "style")
    assert missing.code == 1 and "no memory named `style`" in missing.err


def test_after_a_model_switch_memory_selection_asks_the_new_model(tmp_path: Path) -> None:
    """`/model` (Agent.set_model) closes the first model's provider: memory selection
    must ask the model switched to, not the closed one."""
    seed(tmp_path)
    (tmp_path / "first.yaml").write_text("- text: never asked\n")
    (tmp_path / "second.yaml").write_text("- text: '[\"deploy-window\"]'\n- text: Not on Friday.\n")
    manifest = project(
        tmp_path, strategy="model", model="  provider: scripted\n  script: first.yaml\n"
    )
    agent = build_agent(load_manifest(manifest), trust=True, record_session=False)

    async def go() -> list[Any]:
        async with agent:
            await agent.set_model(f"scripted:{tmp_path / 'second.yaml'}")
            return [e async for e in agent.stream("When can we deploy?")]

    events = asyncio.run(go())
    assert events[-1].reason == "completed", events[-1]
    assert events[-1].text == "Not on Friday."
    assert not [e for e in events if e.kind == "diagnostic"], events
    assert agent.memory is not None and agent.memory.model.endswith("second.yaml")
