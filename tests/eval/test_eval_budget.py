"""Budgets in `assemble eval`: a budget for the whole evaluation stops starting runs
once spent and records the rest as `budget` (exit 3, resumable); each run's own budget
(`defaults.budget`, a task's `budget`, `--budget-tokens`) stops that run alone; a
budget in dollars on a model without a price is refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble
from eval_project import Project, answer, call


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def five_tasks(project: Project) -> list[dict[str, Any]]:
    """Each run reports 1,000 input and 500 output tokens, in one reply."""
    model = project.script("spend", [answer("Done.", input_tokens=1000, output_tokens=500)])
    return [{"id": f"t{n}", "prompt": "spend", "model": model} for n in range(1, 6)]


def test_a_total_budget_stops_scheduling_and_records_the_rest(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file(five_tasks(project), budget={"tokens": 4000})
    out = project.root / "out.jsonl"
    result = assemble(capsys, "eval", str(file), "--trust", "--out", str(out), "--concurrency", "1")

    assert result.code == 3, result.out + result.err
    got = {r["task"]: r for r in records(out)}
    # 1,500 tokens a run: after two runs (3,000), the third's request (the prompt and
    # the coding tools, about 1,000 tokens, and a minimal reply) cannot fit: that run
    # stops before its request, and the budget counts as spent
    assert [got[t]["status"] for t in ("t1", "t2")] == ["passed"] * 2
    assert got["t3"]["status"] == "failed" and got["t3"]["reason"] == "budget"
    assert got["t3"]["usage"]["input_tokens"] == 0
    for task in ("t4", "t5"):
        assert got[task]["status"] == "budget" and got[task]["reason"] == "budget"
        assert got[task]["turns"] == 0 and got[task]["usage"]["input_tokens"] == 0
        assert got[task]["budget"] == {
            "budget": "tokens",
            "limit": 4000,
            "used": 3000,
            "scope": "evaluation",
        }
    assert "2 not run (the evaluation's budget was spent)" in result.out
    assert "BUDGET t4#1: not run: the evaluation budget `tokens` is spent" in result.out

    # resumed with a larger budget (from the command line), only the unrun ones run
    again = assemble(
        capsys, "eval", str(file), "--trust", "--out", str(out), "--total-budget-tokens", "99999"
    )
    assert again.code == 1, again.out
    latest = {r["task"]: r for r in records(out)}
    assert [latest[t]["status"] for t in ("t1", "t2", "t4", "t5")] == ["passed"] * 4
    assert latest["t3"]["status"] == "failed"  # it ran: resuming leaves it be
    assert len(records(out)) == 7  # five, then the two that had not run


def test_each_runs_own_budget_stops_that_run_only(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`defaults.budget: {tokens: 2500}`: a run whose first request used 2,000 tokens
    has no room for a second one (its input alone is about 1,800 tokens); a task with
    its own larger budget goes on."""
    steps = [
        call("read", path="notes.txt") | {"usage": {"input_tokens": 1800, "output_tokens": 200}},
        answer("42.", input_tokens=1900, output_tokens=10),
    ]
    model = project.script("two", steps)
    file = project.eval_file(
        [
            {"id": "tight", "prompt": "read", "model": model},
            {"id": "roomy", "prompt": "read", "model": model, "budget": {"tokens": 10000}},
        ],
        defaults={"budget": {"tokens": 2500}},
    )
    out = project.root / "out.jsonl"
    result = assemble(capsys, "eval", str(file), "--trust", "--out", str(out))

    assert result.code == 1, result.out
    got = {r["task"]: r for r in records(out)}
    assert got["tight"]["status"] == "failed" and got["tight"]["reason"] == "budget"
    assert got["tight"]["budget"]["budget"] == "tokens"
    assert got["tight"]["budget"]["limit"] == 2500 and got["tight"]["budget"]["scope"] == "run"
    assert got["tight"]["usage"]["input_tokens"] + got["tight"]["usage"]["output_tokens"] == 2000
    assert got["roomy"]["status"] == "passed"
    # the command line's per-run budget overrides the file's, for every task
    out2 = project.root / "out2.jsonl"
    again = assemble(
        capsys, "eval", str(file), "--trust", "--out", str(out2), "--budget-tokens", "900"
    )
    assert again.code == 1
    assert {r["task"]: r["reason"] for r in records(out2)} == {"tight": "budget", "roomy": "budget"}


def test_a_dollar_budget_on_an_unpriced_model_is_refused_before_any_run(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file(five_tasks(project))
    out = project.root / "out.jsonl"
    result = assemble(
        capsys, "eval", str(file), "--trust", "--out", str(out), "--total-budget-usd", "1"
    )
    assert result.code == 2
    assert "a `cost_usd` budget needs the price of scripted:" in result.err
    assert not out.exists()


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"tokens": 0}, "must be greater than 0, got 0 [budget.tokens]"),
        ({"wall_time": "10 parsecs"}, "write a duration as seconds"),
        ({"wall_time": "0m"}, "a duration must be more than 0 seconds"),
        ({"cost_usd": -2}, "[budget.cost_usd]"),
    ],
)
def test_bad_eval_budgets_are_located_errors(
    project: Project, capsys: pytest.CaptureFixture[str], budget: dict[str, Any], message: str
) -> None:
    file = project.eval_file([{"id": "a", "prompt": "x"}], budget=budget)
    result = assemble(capsys, "validate", str(file))
    assert result.code == 1, result.out
    assert message in result.out
    assert "t.eval.yaml:4:" in result.out  # the budget's own line
