"""Making memories: the `remember` tool and extraction at the end of a session."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from assembler.errors import ProviderError
from assembler.manifest.model import MemoryPolicy
from assembler.memory import (
    MemoryRecord,
    MemoryStore,
    extract_memories,
    make_remember_tool,
    validate_record,
)
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from assembler.testing import FunctionModel, ScriptedModel
from assembler.tools.base import ToolContext, ToolResult

RecordFactory = Callable[..., MemoryRecord]
PolicyFactory = Callable[..., MemoryPolicy]


def call(store: MemoryStore, policy: MemoryPolicy, args: Mapping[str, Any]) -> ToolResult:
    tool = make_remember_tool(store, policy)
    return asyncio.run(tool.execute(args, ToolContext(workspace=Path.cwd())))


ARGS = {
    "name": "prefers-pnpm",
    "description": "The user prefers pnpm",
    "type": "user",
    "body": "Always use pnpm, never npm.",
}


def test_remember_tool_schema_matches_the_validation(
    store: MemoryStore, policy: MemoryPolicy
) -> None:
    tool = make_remember_tool(store, policy)
    assert tool.name == "remember"
    assert tool.source == "memory"
    schema = tool.schema().parameters
    jsonschema.validate(ARGS, schema)
    assert schema["required"] == ["name", "description", "type", "body"]
    assert schema["properties"]["type"]["enum"] == ["user", "feedback", "project", "reference"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ARGS, "name": "Bad Name"}, schema)


def test_remember_saves_a_record(store: MemoryStore, policy: MemoryPolicy) -> None:
    result = call(store, policy, ARGS)
    assert result == ToolResult(
        "Memory 'prefers-pnpm' saved.",
        details={
            "name": "prefers-pnpm",
            "created": True,
            "path": str(store.path / "prefers-pnpm.md"),
        },
    )
    assert store.get("prefers-pnpm") == validate_record(ARGS)
    assert MemoryStore.open(policy.store, policy).names() == ("prefers-pnpm",)


def test_remember_with_an_existing_name_updates_it(
    store: MemoryStore, policy: MemoryPolicy
) -> None:
    call(store, policy, ARGS)
    result = call(store, policy, {**ARGS, "body": "pnpm, and bun for scripts."})
    assert not result.is_error
    assert "updated" in result.content
    assert result.details["created"] is False
    record = store.get("prefers-pnpm")
    assert record is not None and record.body == "pnpm, and bun for scripts."
    assert len(store) == 1


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"name": "Prefers PNPM"}, "lowercase letters, digits and hyphens"),
        ({"type": "preference"}, "type must be one of"),
        ({"description": "two\nlines"}, "description must be one line"),
        ({"body": "x" * 5000}, "body is 5000 bytes, over the limit of 4096 bytes"),
        ({"extra": True}, "unknown field(s) extra"),
    ],
)
def test_remember_refuses_invalid_records_with_an_error_result(
    store: MemoryStore, policy: MemoryPolicy, changes: dict[str, Any], problem: str
) -> None:
    result = call(store, policy, {**ARGS, **changes})
    assert result.is_error
    assert result.content.startswith("remember: invalid memory record")
    assert problem in result.content
    assert len(store) == 0
    assert not list(store.path.glob("*.md"))


def test_remember_reports_missing_fields(store: MemoryStore, policy: MemoryPolicy) -> None:
    result = call(store, policy, {"name": "x"})
    assert result.is_error
    assert "missing field(s) description, type, body" in result.content


def test_remember_uses_the_policy_size_limit(make_policy: PolicyFactory) -> None:
    policy = make_policy(record_max_bytes=256)
    store = MemoryStore.open(policy.store, policy)
    assert (
        "at most 256 bytes"
        in make_remember_tool(store, policy).parameters["properties"]["body"]["description"]
    )
    assert call(store, policy, {**ARGS, "body": "x" * 257}).is_error


# -- extraction at the end of a session -----------------------------------------------------

CONVERSATION = (
    UserMessage("Please always use pnpm in this repo."),
    ContextMessage("## memory\n### secret-memory (user)\nshould not be re-extracted\nbody"),
    AssistantMessage("Understood.", (ToolCall("c1", "bash", {"command": "pnpm install"}),)),
    ToolResultMessage("c1", "bash", "added 12 packages"),
    AssistantMessage("Done."),
)


def run_extraction(
    model: Any, store: MemoryStore, policy: MemoryPolicy, messages: Any = CONVERSATION
) -> Any:
    return asyncio.run(extract_memories(model, messages, store, policy))


def test_extraction_stores_valid_records_and_reports_invalid_ones(
    store: MemoryStore, policy: MemoryPolicy, rec: RecordFactory
) -> None:
    store.upsert(rec("existing-note"))
    answer = json.dumps(
        [
            ARGS,
            {"name": "Bad Name", "description": "d", "type": "user", "body": "b"},
            {
                "name": "repo-uses-pnpm",
                "description": "The repo uses pnpm",
                "type": "project",
                "body": "pnpm install works.",
            },
            {"name": "repo-uses-pnpm", "description": "dup", "type": "project", "body": "b"},
        ]
    )
    with ScriptedModel([f"```json\n{answer}\n```"]) as model:
        result = run_extraction(model, store, policy)
    assert result.names == ("prefers-pnpm", "repo-uses-pnpm")
    assert len(result.diagnostics) == 2
    assert "record 2: invalid memory record 'Bad Name'" in result.diagnostics[0]
    assert "not stored" in result.diagnostics[0]
    assert "record 4: 'repo-uses-pnpm' appears twice" in result.diagnostics[1]
    assert store.names() == ("existing-note", "prefers-pnpm", "repo-uses-pnpm")
    assert store.get("prefers-pnpm") == validate_record(ARGS)

    prompt = model.last_request.messages[0]
    assert isinstance(prompt, UserMessage)
    assert "User: Please always use pnpm in this repo." in prompt.content
    assert 'Assistant called bash: {"command": "pnpm install"}' in prompt.content
    assert "Result of bash: added 12 packages" in prompt.content
    assert "- existing-note (project): about existing note" in prompt.content
    assert "should not be re-extracted" not in prompt.content
    assert "JSON list of records" in model.last_request.system


def test_extraction_accepts_a_records_object_and_an_empty_list(
    store: MemoryStore, policy: MemoryPolicy
) -> None:
    with ScriptedModel([json.dumps({"records": [ARGS]}), "[]"]) as model:
        assert run_extraction(model, store, policy).names == ("prefers-pnpm",)
        empty = run_extraction(model, store, policy)
    assert empty.names == () and empty.diagnostics == ()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("I would remember the pnpm thing.", "invalid answer: the answer is not JSON"),
        ('{"name": "x"}', "expected a JSON list of records"),
    ],
)
def test_extraction_with_an_invalid_answer_stores_nothing(
    store: MemoryStore, policy: MemoryPolicy, answer: str, problem: str
) -> None:
    with ScriptedModel([answer]) as model:
        result = run_extraction(model, store, policy)
    assert result.names == ()
    assert problem in result.diagnostics[0]
    assert len(store) == 0


def test_extraction_provider_error_is_a_diagnostic(
    store: MemoryStore, policy: MemoryPolicy
) -> None:
    def fail(request: ModelRequest) -> str:
        raise ProviderError("rate limited")

    result = run_extraction(FunctionModel(fail), store, policy)
    assert result.names == ()
    assert result.diagnostics == (
        "memory extraction: the model request failed (ProviderError: rate limited)",
    )


def test_extraction_without_a_user_message_asks_nothing(
    store: MemoryStore, policy: MemoryPolicy
) -> None:
    model = ScriptedModel([])
    result = run_extraction(model, store, policy, messages=(AssistantMessage("hello"),))
    assert result.names == () and result.diagnostics == ()
    assert model.requests == []
