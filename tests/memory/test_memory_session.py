"""MemorySession: selected memory reaches the model exactly once per request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence

import pytest

from assembler.manifest.model import MemoryPolicy
from assembler.memory import (
    MemorySession,
    MemoryStore,
    format_memories,
    make_record,
    validate_record,
)
from assembler.memory.index import IndexFailureError, StoreIndex
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from assembler.prompt.renderer import DynamicPromptRenderer, MemoryEntry, WorkspaceView
from assembler.testing import ScriptedModel

PolicyFactory = Callable[..., MemoryPolicy]

DEPLOY_BODY = "Run make deploy ENV=staging; the VPN must be up."
RECORDS = (
    make_record("deploy-staging", "How to deploy to staging", "project", DEPLOY_BODY),
    make_record("prefers-pnpm", "The user prefers pnpm", "user", "Always pnpm, never npm."),
)


def open_session(
    make_policy: PolicyFactory,
    *,
    injection: str = "message",
    model: object = None,
    **changes: object,
) -> MemorySession:
    policy = make_policy(injection=injection, **changes)
    store = MemoryStore.open(policy.store, policy)
    store.upsert_many(RECORDS)
    return MemorySession(store, policy, model, injection == "message")  # type: ignore[arg-type]


def system_prompt(memory: Sequence[MemoryEntry]) -> str:
    return DynamicPromptRenderer().render(
        identity="You are a test agent.",
        context={},
        tools=(),
        workspace=WorkspaceView("/ws"),
        memory=memory,
    )


def occurrences(text: str, system: str, messages: Sequence[Message]) -> int:
    """How often `text` reaches the model in one request: prompt plus messages."""
    contents = [getattr(m, "content", "") or getattr(m, "text", "") for m in messages]
    return system.count(text) + sum(content.count(text) for content in contents)


def test_the_context_message_is_the_seed_reference_literal() -> None:
    """Message mode sends the same block as the prompt, the seed reference's literal."""
    database = MemoryEntry("database", "project", "{description}", "{body}")
    following = MemoryEntry("next", "type", "{description}", "{body}")
    assert format_memories((database,)) == (
        "<relevant_memories>\n\n## database (project)\n\n{description}\n\n{body}\n\n"
        "</relevant_memories>"
    )
    assert format_memories((database, following)) == (
        "<relevant_memories>\n\n## database (project)\n\n{description}\n\n{body}\n\n"
        "## next (type)\n\n{description}\n\n{body}\n\n</relevant_memories>"
    )


def test_format_matches_the_memory_section_of_the_prompt() -> None:
    entries = tuple(MemoryEntry(r.name, r.type, r.description, r.body) for r in RECORDS)
    sections = DynamicPromptRenderer().render_sections(
        identity="x", context={}, tools=(), workspace=WorkspaceView("/ws"), memory=entries
    )
    memory = next(section for section in sections.sections if section.name == "memory")
    assert format_memories(entries) == memory.text
    assert format_memories(entries) == (
        "<relevant_memories>\n"
        "\n"
        "## deploy-staging (project)\n\nHow to deploy to staging\n\n" + DEPLOY_BODY + "\n\n"
        "## prefers-pnpm (user)\n\nThe user prefers pnpm\n\nAlways pnpm, never npm.\n"
        "\n"
        "</relevant_memories>"
    )
    assert format_memories(entries[:1]) == (
        "<relevant_memories>\n\n## deploy-staging (project)\n\nHow to deploy to staging\n\n"
        + DEPLOY_BODY
        + "\n\n</relevant_memories>"
    )


def test_message_mode_adds_one_context_message_after_the_latest_user_message(
    make_policy: PolicyFactory,
) -> None:
    session = open_session(make_policy, max_records=1)
    selected = asyncio.run(session.select("how do I deploy to staging?"))
    assert [e.name for e in selected] == ["deploy-staging"]
    assert session.selected() == selected

    history: list[Message] = [
        UserMessage("hello"),
        AssistantMessage("Hi."),
        UserMessage("how do I deploy to staging?"),
    ]
    first = session.before_model(history)
    assert first[:3] == history
    assert len(first) == 4
    context = first[3]
    assert isinstance(context, ContextMessage)
    assert context.content == format_memories(selected)  # the block is the whole message
    assert occurrences(DEPLOY_BODY, system_prompt(()), first) == 1
    assert occurrences("<relevant_memories>", system_prompt(()), first) == 1
    assert occurrences("</relevant_memories>", system_prompt(()), first) == 1
    assert history == [first[0], first[1], first[2]]  # the input is not modified


def test_message_mode_stays_once_across_tool_rounds_and_kept_history(
    make_policy: PolicyFactory,
) -> None:
    session = open_session(make_policy, max_records=1)
    asyncio.run(session.select("deploy to staging"))
    request_1 = session.before_model([UserMessage("deploy to staging")])
    # A runner that keeps what it sent, then appends the tool round of this turn.
    history = [
        *request_1,
        AssistantMessage("", (ToolCall("c1", "bash", {"command": "make deploy"}),)),
        ToolResultMessage("c1", "bash", "ok"),
    ]
    request_2 = session.before_model(history)
    assert [type(m).__name__ for m in request_2] == [
        "UserMessage",
        "ContextMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]
    assert occurrences(DEPLOY_BODY, system_prompt(()), request_2) == 1
    assert occurrences("<relevant_memories>", system_prompt(()), request_2) == 1

    # Next turn: the old injection goes, the new one follows the new question.
    asyncio.run(session.select("which package manager, npm or pnpm?"))
    request_3 = session.before_model([*request_2, AssistantMessage("Done."), UserMessage("pnpm?")])
    contexts = [i for i, m in enumerate(request_3) if isinstance(m, ContextMessage)]
    assert contexts == [len(request_3) - 1]
    assert isinstance(request_3[-2], UserMessage)
    assert occurrences(DEPLOY_BODY, "", request_3) == 0
    assert occurrences("Always pnpm, never npm.", "", request_3) == 1
    assert occurrences("<relevant_memories>", "", request_3) == 1


def test_message_mode_leaves_other_context_messages_alone(make_policy: PolicyFactory) -> None:
    session = open_session(make_policy)
    asyncio.run(session.select("deploy"))
    foreign = ContextMessage("from an extension")
    result = session.before_model([UserMessage("deploy"), foreign])
    assert result[1].role == "context" and result[2] == foreign


def test_message_mode_with_nothing_selected_adds_nothing(make_policy: PolicyFactory) -> None:
    session = open_session(make_policy)
    assert asyncio.run(session.select("quantum chromodynamics")) == ()
    messages: list[Message] = [UserMessage("quantum chromodynamics")]
    assert session.before_model(messages) == messages


def test_system_mode_leaves_messages_unchanged_and_feeds_the_prompt(
    make_policy: PolicyFactory,
) -> None:
    session = open_session(make_policy, injection="system", max_records=1)
    assert session.emit_context_messages is False
    asyncio.run(session.select("how do I deploy to staging?"))
    messages: list[Message] = [UserMessage("how do I deploy to staging?")]
    request = session.before_model(messages)
    assert request == messages
    prompt = system_prompt(session.selected())
    assert prompt.endswith(
        "\n\n## memory\n<relevant_memories>\n\n## deploy-staging (project)\n\n"
        "How to deploy to staging\n\n" + DEPLOY_BODY + "\n\n</relevant_memories>"
    )
    assert occurrences(DEPLOY_BODY, prompt, request) == 1
    assert occurrences("<relevant_memories>", prompt, request) == 1
    assert occurrences("</relevant_memories>", prompt, request) == 1


def test_open_uses_the_policy_injection(make_policy: PolicyFactory) -> None:
    assert MemorySession.open(make_policy(injection="message")).emit_context_messages is True
    assert MemorySession.open(make_policy(injection="system")).emit_context_messages is False


def test_remember_tool_is_offered_when_the_policy_allows(make_policy: PolicyFactory) -> None:
    assert [t.name for t in open_session(make_policy).tools()] == ["remember"]
    assert open_session(make_policy, extraction_tool=False).tools() == ()


def test_selection_sees_records_written_by_another_process(make_policy: PolicyFactory) -> None:
    session = open_session(make_policy)
    other = MemoryStore.open(session.store.path)
    other.upsert(make_record("kube-access", "Cluster access", "reference", "kubectl config."))
    assert [e.name for e in asyncio.run(session.select("kubectl"))] == ["kube-access"]


def test_model_selection_errors_are_diagnostics_of_the_session(make_policy: PolicyFactory) -> None:
    with ScriptedModel(["not json"]) as model:
        session = open_session(make_policy, strategy="model", model=model)
        assert asyncio.run(session.select("deploy")) == ()
    diagnostics = session.take_diagnostics()
    assert len(diagnostics) == 1 and "invalid answer from the model" in diagnostics[0]
    assert session.take_diagnostics() == ()


def test_store_diagnostics_are_reported_once(make_policy: PolicyFactory) -> None:
    policy = make_policy()
    policy.store.mkdir(parents=True)
    (policy.store / "broken.md").write_text("nope")
    session = MemorySession.open(policy)
    assert "broken.md: does not start with" in session.take_diagnostics()[0]


def test_end_session_extracts_then_consolidates(make_policy: PolicyFactory) -> None:
    new = {"name": "uses-make", "description": "Deploys use make", "type": "project", "body": "b"}
    merged = {**new, "body": "Deploys use make; ENV picks the target."}
    with ScriptedModel(
        [
            json.dumps([new]),
            json.dumps({"merge": [merged], "delete": ["deploy-staging"]}),
        ]
    ) as model:
        session = open_session(
            make_policy,
            model=model,
            extraction_at_session_end=True,
            consolidation_max_records=2,
        )
        asyncio.run(session.end_session([UserMessage("deploy"), AssistantMessage("done")]))
    assert session.store.names() == ("prefers-pnpm", "uses-make")
    record = session.store.get("uses-make")
    assert record == validate_record(merged)
    assert session.take_diagnostics() == ()


def test_end_session_does_nothing_the_policy_does_not_ask_for(make_policy: PolicyFactory) -> None:
    model = ScriptedModel([])
    session = open_session(make_policy, model=model)
    asyncio.run(session.end_session([UserMessage("deploy")]))
    assert model.requests == []


@pytest.mark.parametrize("action", ["extract", "consolidate"])
def test_on_demand_without_a_model_is_a_diagnostic(make_policy: PolicyFactory, action: str) -> None:
    session = open_session(make_policy)
    if action == "extract":
        asyncio.run(session.extract([UserMessage("x")]))
    else:
        asyncio.run(session.consolidate())
    assert session.take_diagnostics() == (f"memory {action.rstrip('e')}ion: no model to ask",)


def test_an_index_failure_during_selection_is_a_diagnostic(
    make_policy: PolicyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = open_session(make_policy, injection="system")

    def failing(*args: object) -> object:
        raise IndexFailureError("the memory index failed: database is locked")

    monkeypatch.setattr(StoreIndex, "term_stats", failing)
    assert asyncio.run(session.select("deploy to staging")) == ()
    assert session.take_diagnostics() == (
        "memory selection: the memory index failed: database is locked; none selected",
    )
