"""Eval with a typed agent: a task's `params`, a task that runs the agent's `task:`,
`output_matches` (a schema, or a subset) and `output_equals`; results carry `output`."""

from __future__ import annotations

import json

import pytest
from clirun import assemble
from eval_project import Project, call

from assembler.eval.load import validate_eval_file
from assembler.eval.output_checks import check_output, is_schema, json_equal
from assembler.eval.spec import Check

TYPED = """\
version: 1
name: tester
identity: You triage.
model: scripted:scripts/default.yaml
workspace: ws
tools: {sets: []}
parameters:
  issue: {type: string}
  limit: {type: integer, default: 2}
task: "Triage {{ issue }} with at most {{ limit }} labels."
output:
  schema:
    type: object
    required: [labels, priority]
    properties:
      labels: {type: array, items: {type: string}}
      priority: {enum: [p0, p1, p2]}
  retries: 0
"""


@pytest.fixture
def typed(project: Project) -> Project:
    (project.root / "agent.yaml").write_text(TYPED)
    return project


def test_typed_tasks_run_and_their_output_is_checked_and_recorded(
    typed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = typed.script("answer", [call("final_answer", labels=["bug", "ui"], priority="p1")])
    file = typed.eval_file(
        [
            {
                "id": "schema",
                "params": {"issue": "#1"},
                "model": answer,
                "checks": [
                    {"output_matches": {"properties": {"labels": {"minItems": 2}}}},
                    {"output_matches": {"priority": "p1"}},
                    {"output_equals": {"labels": ["bug", "ui"], "priority": "p1"}},
                ],
            },
            {
                "id": "wrong",
                "params": {"issue": "#2"},
                "model": answer,
                "checks": [{"output_matches": {"priority": "p0", "labels": ["bug"]}}],
            },
        ]
    )
    out = typed.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--trust", "--out", str(out))
    assert outcome.code == 1, outcome.out
    records = {r["task"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["schema"]["status"] == "passed"
    assert records["schema"]["output"] == {"labels": ["bug", "ui"], "priority": "p1"}
    assert records["wrong"]["status"] == "failed"
    assert records["wrong"]["checks"][0]["evidence"] == (
        '$.priority: expected "p0", got "p1"; $.labels: expected ["bug"], got ["bug", "ui"]'
    )


def test_task_params_are_checked_against_the_agent_at_validate(typed: Project) -> None:
    file = typed.eval_file(
        [
            {"id": "a", "params": {"issue": 3, "limt": 1}},
            {"id": "b", "prompt": "hi"},  # `issue` is required
        ]
    )
    messages = [i.message for i in validate_eval_file(file, display=file.name).issues]
    assert messages == [
        "2 problems with the parameters of agent `tester`:\n"
        "  limt: not a parameter of this agent (its parameters: `issue`, `limit`); did you "
        "mean `limit`?\n"
        "  issue: 3 is not of type 'string'",
        "1 problem with the parameters of agent `tester`:\n"
        "  issue: required (string), and not given",
    ]


def test_output_checks_need_a_typed_agent(project: Project) -> None:
    file = project.eval_file([{"id": "a", "checks": [{"output_equals": 1}]}])
    messages = [i.message for i in validate_eval_file(file, display=file.name).issues]
    assert messages == [
        "a task needs a `prompt` or a `prompt_file`: the agent `tester` has no `task:` to run",
        "`output_equals` needs an agent with `output:`",
    ]


def test_schema_or_subset() -> None:
    assert is_schema({"type": "object", "required": ["a"]})
    assert is_schema({"$schema": "https://json-schema.org/draft/2020-12/schema", "x": 1})
    assert not is_schema({"priority": "p1"})
    assert not is_schema({"type": "bug", "title": "x", "labels": []})
    assert check_output(Check("output_matches", value={"a": {"b": 1}}), {"a": {"b": 1, "c": 2}})[0]
    assert check_output(Check("output_matches", value={"a": 1}), None) == (
        False,
        "the run gave no typed answer",
    )
    assert not json_equal(True, 1) and json_equal(1, 1.0) and not json_equal("1", 1)
    assert check_output(Check("output_equals", value=[1, True]), [1, 1]) == (
        False,
        "not equal; the answer: [1, 1]",
    )
