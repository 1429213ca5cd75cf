"""A typed run (`output:`) ends with exactly one valid object: the `final_answer` tool
with the scripted model, an invalid answer sent back with its errors up to `retries`
times, then `output_invalid`; parameters bound before any model call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assembler.agent import build_agent
from assembler.errors import ParameterError
from assembler.messages import ForcedTool, ToolResultMessage, UserMessage
from assembler.sessions.store import Session
from assembler.testing import ScriptedModel, text, tool_call
from assembler.typed.output import MAX_OUTPUT_BYTES

MANIFEST = """\
version: 1
name: triage
identity: You triage issues.
tools: {sets: []}
parameters:
  issue_url: {type: string, pattern: "^https://"}
  max_labels: {type: integer, default: 3, minimum: 1}
  severity_floor: {enum: [low, medium, high], default: low}
task: "Triage {{ issue_url }} with at most {{ max_labels }} labels ({{ severity_floor }})."
output:
  schema:
    type: object
    required: [labels, priority]
    additionalProperties: false
    properties:
      labels: {type: array, items: {type: string}}
      priority: {enum: [p0, p1, p2, p3]}
  retries: RETRIES
"""


def manifest(tmp_path: Path, retries: int = 2, **replace: str) -> Path:
    body = MANIFEST.replace("RETRIES", str(retries))
    for old, new in replace.items():
        body = body.replace(old, new)
    path = tmp_path / "agent.yaml"
    path.write_text(body)
    return path


def run(path: Path, model: ScriptedModel, **kwargs: Any) -> Any:
    agent = build_agent(path, provider=model, session_dir=path.parent / "sessions", trust=True)

    async def go() -> Any:
        try:
            return await agent.prompt(**kwargs)
        finally:
            await agent.aclose()

    return agent, asyncio.run(go())


URL = {"issue_url": "https://example.com/issues/1"}


def test_a_valid_answer_ends_the_run_with_the_object(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("final_answer", labels=["bug"], priority="p1")])
    with model:
        agent, result = run(manifest(tmp_path), model, params=URL)
    assert result.reason == "completed"
    assert result.output == {"labels": ["bug"], "priority": "p1"}
    request = model.requests[0]
    # the task rendered with the values and the defaults is the first message
    assert request.messages[0] == UserMessage(
        "Triage https://example.com/issues/1 with at most 3 labels (low)."
    )
    assert [t.name for t in request.tools] == ["final_answer"]
    assert request.tools[0].parameters["required"] == ["labels", "priority"]
    assert request.settings.tool_choice == ForcedTool("final_answer")  # the only tool
    assert request.output is not None and request.output.tool == "final_answer"
    # the session records the values and the output
    assert agent.session is not None
    lines = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    events = [line["event"] for line in lines if line.get("type") == "event"]
    assert events[0]["params"] == {**URL, "max_labels": 3, "severity_floor": "low"}
    assert events[-1]["type"] == "run_end" and events[-1]["output"] == result.output


def test_an_invalid_answer_goes_back_with_its_errors_and_one_retry_is_used(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            tool_call("final_answer", labels=["bug", 3], priority="p9"),
            tool_call("final_answer", labels=["bug"], priority="p0"),
        ]
    )
    with model:
        _, result = run(manifest(tmp_path), model, params=URL)
    assert result.reason == "completed"
    assert result.output == {"labels": ["bug"], "priority": "p0"}
    feedback = model.requests[1].messages[-1]
    assert isinstance(feedback, ToolResultMessage) and feedback.is_error
    assert feedback.content == (
        "The answer does not match the output schema:\n"
        "- $.labels[1]: 3 is not of type 'string'\n"
        "- $.priority: 'p9' is not one of ['p0', 'p1', 'p2', 'p3']\n"
        "Fix every error and call `final_answer` again (2 attempts left)."
    )


def test_an_answer_that_stays_invalid_fails_after_its_retries(tmp_path: Path) -> None:
    wrong = tool_call("final_answer", labels="bug", priority="p1")
    model = ScriptedModel([wrong, wrong])
    with model:
        _, result = run(manifest(tmp_path, retries=1), model, params=URL)
    assert result.reason == "output_invalid"
    assert result.output is None
    assert result.message == (
        "no valid answer after 2 attempts: $.labels: 'bug' is not of type 'array'"
    )
    assert len(model.requests) == 2


def test_text_instead_of_the_tool_is_answered_once_with_a_reminder(tmp_path: Path) -> None:
    model = ScriptedModel(
        [text("labels: bug"), tool_call("final_answer", labels=[], priority="p3")]
    )
    with model:
        _, result = run(manifest(tmp_path, retries=0), model, params=URL)
    assert result.output == {"labels": [], "priority": "p3"}
    reminder = model.requests[1].messages[-1]
    assert isinstance(reminder, UserMessage) and "`final_answer` tool" in reminder.content
    assert model.requests[1].settings.tool_choice == ForcedTool("final_answer")


def test_a_non_object_schema_is_asked_for_wrapped_and_returned_bare(tmp_path: Path) -> None:
    path = manifest(tmp_path)
    body = path.read_text().split("output:")[0] + (
        "output:\n  schema: {type: array, items: {type: string}}\n"
    )
    path.write_text(body)
    model = ScriptedModel([tool_call("final_answer", value=["a", "b"])])
    with model:
        _, result = run(path, model, params=URL)
    assert result.output == ["a", "b"]
    assert model.requests[0].tools[0].parameters["required"] == ["value"]


def test_a_10_mb_answer_is_refused_clearly_and_the_session_stays_whole(tmp_path: Path) -> None:
    huge = "x" * (10 * 1024 * 1024)
    model = ScriptedModel([tool_call("final_answer", labels=[huge], priority="p1")])
    with model:
        agent, result = run(manifest(tmp_path, retries=0), model, params=URL)
    assert result.reason == "output_invalid"
    assert "an answer may be at most 4 MiB" in result.message
    assert MAX_OUTPUT_BYTES == 4 * 1024 * 1024
    assert agent.session is not None  # every line of the session is still readable
    reopened = Session.load(agent.session.path)
    assert reopened.id == agent.session.id and reopened.skipped == 0
    for line in agent.session.path.read_text().splitlines():
        json.loads(line)


def test_every_parameter_problem_is_listed_before_any_model_call(tmp_path: Path) -> None:
    model = ScriptedModel([])
    agent = build_agent(manifest(tmp_path), provider=model, record_session=False, trust=True)
    with pytest.raises(ParameterError) as caught:
        asyncio.run(agent.prompt(params={"max_labels": 0, "severity_floor": "urgent", "labelz": 1}))
    assert caught.value.problems == (
        "labelz: not a parameter of this agent (its parameters: `issue_url`, `max_labels`, "
        "`severity_floor`); did you mean `max_labels`?",
        "issue_url: required (string), and not given",
        "max_labels: 0 is less than the minimum of 1",
        "severity_floor: 'urgent' is not one of ['low', 'medium', 'high']",
    )
    assert model.requests == []
    asyncio.run(agent.aclose())


def test_build_agent_checks_params_before_building(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="issue_url: 'http://x' does not match"):
        build_agent(
            manifest(tmp_path),
            provider=ScriptedModel([]),
            record_session=False,
            params={"issue_url": "http://x"},
        )


def test_a_prompt_replaces_the_task_and_the_values_stay_bound(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("final_answer", labels=[], priority="p2")])
    agent = build_agent(
        manifest(tmp_path), provider=model, record_session=False, trust=True, params=URL
    )

    async def go() -> Any:
        try:
            return await agent.prompt("Just answer p2.")
        finally:
            await agent.aclose()

    with model:
        result = asyncio.run(go())
    assert result.output == {"labels": [], "priority": "p2"}
    assert model.requests[0].messages[0] == UserMessage("Just answer p2.")
