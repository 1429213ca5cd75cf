"""An evaluation without the CLI (`assembler.eval.orchestration`), and the agent's
team loaded once per evaluation rather than once per task."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from eval_project import Project, answer

import assembler.agent.team as team_module
from assembler.errors import ConfigurationError, TrustError, UsageError
from assembler.eval.orchestration import EvalOptions, evaluate_file, prepare_evaluation

REVIEWER = """\
version: 1
name: reviewer
identity: You review.
model: scripted:scripts/default.yaml
workspace: ws
tools:
  sets: [readonly]
"""


def test_an_embedding_program_runs_an_evaluation(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.script("says", [answer("the answer is 42")])
    file = project.eval_file(
        [
            {"id": "good", "prompt": "?", "model": "scripted:scripts/says.yaml",
             "checks": [{"answer_contains": "42"}]},
            {"id": "bad", "prompt": "?", "checks": [{"answer_contains": "43"}]},
        ]
    )  # fmt: skip
    out = project.root / "r.jsonl"
    result = asyncio.run(evaluate_file(file, EvalOptions(out=out, repeat=2)))
    assert (result.planned, result.finished, result.todo) == (4, 4, 4)
    assert [(r.task, r.repeat, r.status) for r in result.records] == [
        ("good", 1, "passed"), ("good", 2, "passed"), ("bad", 1, "failed"), ("bad", 2, "failed"),
    ]  # fmt: skip
    assert not result.passed and not result.interrupted
    assert len(out.read_text().splitlines()) == 4  # the same results file as the CLI's
    assert capsys.readouterr().out == ""  # nothing printed: the caller has the result
    again = asyncio.run(evaluate_file(file, EvalOptions(out=out, repeat=2)))
    assert (again.finished, again.todo, len(again.records)) == (0, 0, 4)  # resumed


def test_every_usage_problem_is_raised_before_anything_is_written(project: Project) -> None:
    (project.root / "agent.yaml").write_text(
        (project.root / "agent.yaml").read_text() + "extensions:\n  - path: ext.py\n"
    )
    (project.root / "ext.py").write_text("def setup(api):\n    pass\n")
    file = project.eval_file([{"id": "t", "prompt": "?"}])
    out = project.root / "r.jsonl"
    with pytest.raises(ConfigurationError, match="invalid model 'nocolon'"):
        prepare_evaluation(file, EvalOptions(out=out, model="nocolon"))
    with pytest.raises(TrustError):  # nobody to ask: the extension is not trusted
        prepare_evaluation(file, EvalOptions(out=out))
    prepared = prepare_evaluation(file, EvalOptions(out=out, trust=True))
    assert [run.label for run in prepared.todo] == ["t#1"]
    assert prepared.start_note() == f"1 run(s); results in {out}"
    assert not out.exists()


def test_the_team_is_loaded_once_per_evaluation_not_per_task(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading a team validates each sub-agent's file: count those validations for an
    evaluation of one task and of five; they are the same."""
    (project.root / "reviewer.yaml").write_text(REVIEWER)
    agent = project.root / "agent.yaml"
    agent.write_text(
        agent.read_text().replace("sets: [coding]", "sets: [coding, agent: reviewer.yaml]")
    )
    validated: list[str] = []
    real = team_module.validate_file

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        validated.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(team_module, "validate_file", counting)

    def reviewer_loads(tasks: int) -> int:
        validated.clear()
        file = project.eval_file([{"id": f"t{n}", "prompt": "?"} for n in range(tasks)])
        out = project.root / f"r{tasks}.jsonl"
        result = asyncio.run(evaluate_file(file, EvalOptions(out=out)))
        assert [r.status for r in result.records] == ["passed"] * tasks
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert all(Path(r["session"]).is_file() for r in records)  # each task built an agent
        return validated.count("reviewer.yaml")

    assert reviewer_loads(1) == reviewer_loads(5) == 1


def test_a_manifest_without_a_model_runs_on_the_users_default_named_in_the_records(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chosen where the evaluation starts (a Dask worker would otherwise read its own
    environment), and recorded, so a later run with another default is not mixed in."""
    agent = project.root / "agent.yaml"
    agent.write_text(agent.read_text().replace("model: scripted:scripts/default.yaml\n", ""))
    project.script("mine", [answer("Mine.")])
    monkeypatch.setenv("ASSEMBLER_MODEL", "scripted:scripts/mine.yaml")
    file = project.eval_file([{"id": "t", "prompt": "?"}])
    out = project.root / "r.jsonl"
    result = asyncio.run(evaluate_file(file, EvalOptions(out=out)))
    (record,) = result.records
    assert (record.status, record.answer, record.model) == (
        "passed", "Mine.", "scripted:scripts/mine.yaml",
    )  # fmt: skip
    monkeypatch.setenv("ASSEMBLER_MODEL", "scripted:scripts/default.yaml")
    with pytest.raises(UsageError, match="holds t#1 run with the model scripted:scripts/mine"):
        prepare_evaluation(file, EvalOptions(out=out))
