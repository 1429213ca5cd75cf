"""`limits.budget` and `model.price` at `validate`: bad values are located errors, and
a budget in dollars on a model without a known price is refused."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from clirun import assemble


def manifest(tmp_path: Path, model: str, budget: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            version: 1
            name: spender
            identity: You spend carefully.
            model: {model}
            limits:
              budget: {budget}
            """
        ),
        "utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        ("{cost_usd: -1}", "agent.yaml:6:22: error:"),
        ("{tokens: 0}", "agent.yaml:6:20: error:"),
        ("{wall_time: 15x}", "write a duration as seconds (`900`) or with units"),
        ("{wall_time: 0s}", "a duration must be more than 0 seconds"),
        ("{wall_time: 0}", "agent.yaml:6:23: error:"),
        ("{tool_calls: 2.5}", "agent.yaml:6:24: error:"),
        ("{dollars: 3}", "unknown key `dollars`"),
        ("{}", "agent.yaml:6:11: error:"),
    ],
)
def test_bad_budgets_are_located_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: str, expected: str
) -> None:
    path = manifest(tmp_path, "openai:gpt-4o-mini", budget)
    result = assemble(capsys, "validate", str(path))
    assert result.code == 1, result.out
    assert expected in result.out
    assert "agent.yaml:6:" in result.out  # the budget's own line


def test_a_cost_budget_on_a_model_without_a_price_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = manifest(tmp_path, "{provider: openai, name: my-finetune-7}", "{cost_usd: 2.5}")
    result = assemble(capsys, "validate", str(path))
    assert result.code == 1
    assert (
        "agent.yaml:6:22: error: a `cost_usd` budget needs the price of openai:my-finetune-7, "
        "which is not in the price table"
    ) in result.out


def test_a_cost_budget_with_the_manifests_own_price_or_a_known_model_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    priced = "{provider: openai, name: my-finetune-7, price: {input: 1, output: 4}}"
    for model in (priced, "anthropic:claude-sonnet-4-5", "{provider: openai, name: gpt-4o}"):
        path = manifest(tmp_path, model, "{cost_usd: 2.5, tokens: 400000, wall_time: 15m}")
        result = assemble(capsys, "validate", str(path))
        assert result.code == 0, (model, result.out)


def test_a_bad_price_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = "{provider: openai, name: my-finetune-7, price: {input: 1, outptu: 4}}"
    result = assemble(capsys, "validate", str(manifest(tmp_path, bad, "{tokens: 1000}")))
    assert result.code == 1
    assert "agent.yaml:4:" in result.out and "outptu" in result.out
    negative = "{provider: openai, name: x, price: {input: -1, output: 4}}"
    result = assemble(capsys, "validate", str(manifest(tmp_path, negative, "{tokens: 1000}")))
    assert result.code == 1 and "agent.yaml:4:" in result.out


def test_the_run_refuses_a_cost_budget_it_cannot_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model chosen at run time (`--model`) is checked when the run starts."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = manifest(tmp_path, "{provider: openai, name: gpt-4o}", "{cost_usd: 2.5}")
    result = assemble(
        capsys, "run", str(path), "--model", "openai:my-finetune-7", "-p", "hi", "--no-session"
    )
    assert result.code == 2
    assert "a `cost_usd` budget needs the price of" in result.err + result.out
    assert "Traceback" not in result.err
