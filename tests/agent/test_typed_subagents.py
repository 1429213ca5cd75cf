"""A parent calling a typed child: the child's `parameters` are its tool's input (less
what the parent's entry fixes with `params:`), its task renders with them, and its
`output` object comes back as the tool result, as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from assembler.agent import build_agent
from assembler.messages import ToolResultMessage
from assembler.testing import ScriptedModel, text, tool_call

LEAD = """\
version: 1
name: lead
identity: You lead.
tools:
  sets:
    - agent: labeler.yaml
      params: {style: short}
"""

LABELER = """\
version: 1
name: labeler
description: Labels an issue.
identity: You choose labels.
model: scripted:labeler.script.yaml
tools: {sets: []}
parameters:
  text: {type: string, description: The issue text}
  style: {enum: [short, long], default: long}
task: "Label this ({{ style }}): {{ text }}"
output:
  schema: {type: array, items: {type: string}}
"""


def project(tmp_path: Path, child_script: str) -> Path:
    (tmp_path / "lead.yaml").write_text(LEAD)
    (tmp_path / "labeler.yaml").write_text(LABELER)
    (tmp_path / "labeler.script.yaml").write_text(child_script)
    return tmp_path / "lead.yaml"


def run(lead: Path, model: ScriptedModel) -> Any:
    agent = build_agent(lead, provider=model, record_session=False, trust=True)

    async def go() -> Any:
        try:
            return await agent.prompt("Label the crash report.")
        finally:
            await agent.aclose()

    return asyncio.run(go())


def test_the_parent_calls_a_typed_child_and_gets_its_object(tmp_path: Path) -> None:
    lead = project(
        tmp_path, "- tool_calls: [{name: final_answer, arguments: {value: [bug, crash]}}]\n"
    )
    model = ScriptedModel([tool_call("labeler", text="crash on save"), text("Labelled.")])
    with model:
        result = run(lead, model)
    assert result.reason == "completed"
    (tool,) = model.requests[0].tools
    assert tool.name == "labeler"
    assert tool.parameters == {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The issue text"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    answer = model.requests[1].messages[-1]
    assert isinstance(answer, ToolResultMessage) and not answer.is_error
    assert json.loads(answer.content) == ["bug", "crash"]


def test_arguments_that_do_not_fit_are_an_error_result_listing_them(tmp_path: Path) -> None:
    lead = project(tmp_path, "[]\n")  # the child's model must never be asked
    model = ScriptedModel([tool_call("labeler", text=3, colour="red"), text("Sorry.")])
    with model:
        result = run(lead, model)
    assert result.reason == "completed"
    answer = model.requests[1].messages[-1]
    assert isinstance(answer, ToolResultMessage) and answer.is_error
    assert "colour: not a parameter of this agent" in answer.content
    assert "text: 3 is not of type 'string'" in answer.content
