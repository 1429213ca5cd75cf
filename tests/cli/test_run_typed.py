"""`assemble run` with a typed agent: `--param`/`--params`, the task without -p, the
object alone on stdout, exit 4 when it stays invalid (3 is a budget stop), `--output-file`; `render
--dry-run --param` and `schema --io`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble

MANIFEST = """\
version: 1
name: triage
identity: You triage issues.
model: scripted:script.yaml
tools: {sets: []}
parameters:
  issue_url: {type: string, description: The issue to triage}
  max_labels: {type: integer, default: 3, minimum: 1}
  severity_floor: {enum: [low, medium, high], default: low}
task: |
  Triage {{ issue_url }}. Use at most {{ max_labels }} labels, floor {{ severity_floor }}.
output:
  schema:
    type: object
    required: [labels, priority]
    properties:
      labels: {type: array, items: {type: string}}
      priority: {enum: [p0, p1, p2, p3]}
  retries: 1
"""

VALID = "- text: Looking.\n  tool_calls: [{name: final_answer, arguments: {labels: [bug], priority: p1}}]\n"


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    (tmp_path / "agent.yaml").write_text(MANIFEST)
    (tmp_path / "script.yaml").write_text(VALID)
    return tmp_path / "agent.yaml"


def test_the_task_runs_without_p_and_stdout_is_the_object_alone(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = agent.parent / "out" / "triage.json"
    result = assemble(
        capsys, "run", str(agent), "--trust", "--no-session", "--param", "issue_url=https://x/1",
        "--param", "max_labels=2", "--output-file", str(out),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == '{"labels": ["bug"], "priority": "p1"}\n'
    assert "Looking." in result.err  # the model's text is narration, on stderr
    assert json.loads(out.read_text()) == {"labels": ["bug"], "priority": "p1"}


def test_every_parameter_problem_in_one_error_before_the_model(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (agent.parent / "script.yaml").write_text("[]\n")  # a request would fail differently
    result = assemble(
        capsys, "run", str(agent), "--trust", "--no-session", "--param", "max_labels=many",
        "--param", "severity_floor=urgent", "--param", "colour=red", "--param", "oops",
    )  # fmt: skip
    assert result.code == 1
    assert result.out == ""
    assert result.err == (
        "error: 5 problems with the parameters of agent `triage`:\n"
        "  colour: not a parameter of this agent (its parameters: `issue_url`, `max_labels`, "
        "`severity_floor`)\n"
        "  `oops`: write a parameter as NAME=VALUE\n"
        "  issue_url: required (string: The issue to triage), and not given\n"
        "  max_labels: 'many' is not of type 'integer'\n"
        "  severity_floor: 'urgent' is not one of ['low', 'medium', 'high']\n"
    )


def test_params_from_a_file_and_param_wins(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = agent.parent / "values.json"
    values.write_text('{"issue_url": "https://x/2", "max_labels": 0}')
    result = assemble(
        capsys, "run", str(agent), "--trust", "--no-session", "--json", "--params", str(values),
        "--param", "max_labels=1",
    )  # fmt: skip
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    assert events[0]["type"] == "run_start"
    assert events[0]["prompt"] == "Triage https://x/2. Use at most 1 labels, floor low."
    assert events[-1]["type"] == "run_end"
    assert events[-1]["output"] == {"labels": ["bug"], "priority": "p1"}


def test_an_answer_that_stays_invalid_exits_3(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = "- tool_calls: [{name: final_answer, arguments: {labels: bug, priority: p1}}]\n"
    (agent.parent / "script.yaml").write_text(wrong * 2)
    result = assemble(
        capsys, "run", str(agent), "--trust", "--no-session", "--param", "issue_url=u", "-p", "go"
    )  # fmt: skip
    assert result.code == 4
    assert result.out == ""
    assert (
        "run ended: output_invalid: no valid answer after 2 attempts: "
        "$.labels: 'bug' is not of type 'array'" in result.err
    )


def test_p_output_pipes_into_json_tool(agent: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(agent), "--trust", "--no-session",
         "--params", "-", "--model", "scripted:script.yaml"],
        input='{"issue_url": "https://x/3"}', capture_output=True, text=True, env=env, check=False,
        cwd=agent.parent, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    tool = subprocess.run(
        [sys.executable, "-m", "json.tool"],
        input=run.stdout,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tool.returncode == 0
    assert json.loads(tool.stdout) == {"labels": ["bug"], "priority": "p1"}


def test_render_dry_run_shows_the_first_message(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(
        capsys, "render", "--dry-run", str(agent), "--param", "issue_url=https://x/4",
        "--format", "json",
    )  # fmt: skip
    assert result.code == 0, result.err
    shown = json.loads(result.out)
    assert shown["first_message"] == "Triage https://x/4. Use at most 3 labels, floor low."
    assert shown["parameters"] == {
        "issue_url": "https://x/4",
        "max_labels": 3,
        "severity_floor": "low",
    }
    assert shown["output"]["required"] == ["labels", "priority"]
    text = assemble(capsys, "render", "--dry-run", str(agent))
    assert text.code == 0
    assert "render: no value given for `issue_url`; rendered with sample values" in text.err
    assert text.out.endswith(
        "---- first user message (task) ----\nTriage example. Use at most 3 labels, floor low.\n"
    )
    bad = assemble(capsys, "render", "--dry-run", str(agent), "--param", "max_labels=0")
    assert bad.code == 1
    assert "max_labels: 0 is less than the minimum of 1" in bad.err


def test_schema_io_prints_the_agents_interface(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "schema", "--io", str(agent))
    assert result.code == 0, result.err
    interface = json.loads(result.out)
    assert interface["name"] == "triage"
    assert interface["parameters"]["required"] == ["issue_url"]
    assert interface["parameters"]["properties"]["max_labels"] == {
        "type": "integer",
        "default": 3,
        "minimum": 1,
    }
    assert interface["output"]["properties"]["priority"] == {"enum": ["p0", "p1", "p2", "p3"]}
    assert assemble(capsys, "schema", str(agent)).code == 2


def test_a_session_shows_the_object_indented(capsys: pytest.CaptureFixture[str]) -> None:
    from assembler.cli.display import EventPrinter
    from assembler.runner.events import RunEnd

    printer = EventPrinter(color=False, typed=True)
    printer.show(RunEnd("completed", "", 1, output={"a": [1]}, typed=True))
    printer.show(RunEnd("output_invalid", "", 1, message="no valid answer", typed=True))
    captured = capsys.readouterr()
    assert captured.out == '{\n  "a": [\n    1\n  ]\n}\n'
    assert captured.err == "run ended: output_invalid: no valid answer\n"
