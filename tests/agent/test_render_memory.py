"""`render` without `--input` shows the `## memory` section whenever the selection
does not depend on the message (`all`), and says on stderr that `--input` shows it
when it does (issue 12): "prints the exact system prompt" must hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble
from test_memory_agent import DEPLOY_BODY, TEA_BODY, project, seed

NOTE = (
    "memory: selection `keyword` depends on the user's message; "
    '--input "..." shows the memories it would select'
)


@pytest.mark.parametrize("dry_run", [True, False])
def test_strategy_all_shows_the_memory_section_without_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    seed(tmp_path)
    manifest = project(tmp_path, strategy="all")
    flags = ["--dry-run"] if dry_run else []
    result = assemble(capsys, "render", *flags, "--prompt-only", str(manifest))
    assert result.code == 0, result.err
    assert "\n## memory\n" in result.out
    assert result.out.count(DEPLOY_BODY) == 1  # max_records 1: `all` takes name order
    assert TEA_BODY not in result.out
    assert "--input" not in result.err


@pytest.mark.parametrize("dry_run", [True, False])
def test_keyword_selection_says_input_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    seed(tmp_path)
    flags = ["--dry-run"] if dry_run else []
    result = assemble(capsys, "render", *flags, "--prompt-only", str(project(tmp_path)))
    assert result.code == 0, result.err
    assert "## memory" not in result.out
    assert NOTE in result.err.splitlines()


def test_strategy_none_needs_no_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(tmp_path)
    result = assemble(
        capsys, "render", "--dry-run", "--prompt-only", str(project(tmp_path, strategy="none"))
    )
    assert result.code == 0
    assert "## memory" not in result.out and result.err == ""


def test_render_model_asks_that_model_for_a_model_selection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`render --model` renders the agent as `run --model` builds it: a `model` memory
    selection for `--input` asks that model, the one request render makes."""
    seed(tmp_path)
    manifest = project(tmp_path, strategy="model")
    (tmp_path / "picks.yaml").write_text("- text: '[\"drinks\"]'\n")
    without = assemble(capsys, "render", "--prompt-only", "--input", "tea?", str(manifest))
    assert without.code == 0 and TEA_BODY not in without.out
    assert "the model request failed" in without.err  # no model: none was asked
    result = assemble(
        capsys, "render", "--prompt-only", "--input", "tea?", "--model", "scripted:picks.yaml",
        str(manifest),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.count(TEA_BODY) == 1 and DEPLOY_BODY not in result.out


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_invalid_render_model_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    flags = ["--dry-run"] if dry_run else []
    manifest = project(tmp_path, strategy="none")
    result = assemble(capsys, "render", *flags, "--model", "nocolon", str(manifest))
    assert result.code == 2
    assert result.err.count("invalid model 'nocolon'") == 1 and result.out == ""
