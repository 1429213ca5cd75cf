"""Which model a command uses when the manifest names none, and how a model that cannot
work is reported: a configuration mistake is a usage error (exit 2), said once."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble

from assembler.user_config import config_file

AGENT = """\
version: 1
name: plain
identity: You answer briefly.
workspace: .
"""


def agent(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "reply.yaml").write_text("- text: Hello from the default model.\n")
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT + extra)
    return path


def test_without_any_model_run_says_where_one_can_be_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = assemble(capsys, "run", str(agent(tmp_path)), "--no-session", "-p", "hi")
    assert outcome.code == 2
    assert outcome.err.count("error:") == 1
    assert "plain: no model: set `model:` in the manifest, pass --model" in outcome.err
    assert "ASSEMBLER_MODEL" in outcome.err and str(config_file()) in outcome.err


def test_assembler_model_is_the_default_of_a_manifest_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSEMBLER_MODEL", "scripted:reply.yaml")
    outcome = assemble(capsys, "run", str(agent(tmp_path)), "--no-session", "-p", "hi")
    assert outcome.code == 0, outcome.err
    assert outcome.out == "Hello from the default model.\n"


def test_the_config_file_is_the_default_and_the_manifest_comes_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text("model: scripted:reply.yaml\n")
    outcome = assemble(capsys, "run", str(agent(tmp_path)), "--no-session", "-p", "hi")
    assert outcome.out == "Hello from the default model.\n"
    (tmp_path / "own.yaml").write_text("- text: The manifest's own.\n")
    own = agent(tmp_path, "model: scripted:own.yaml\n")
    outcome = assemble(capsys, "run", str(own), "--no-session", "-p", "hi")
    assert outcome.out == "The manifest's own.\n"


def test_an_invalid_default_names_where_it_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSEMBLER_MODEL", "gpt-4o")
    outcome = assemble(capsys, "run", str(agent(tmp_path)), "--no-session", "-p", "hi")
    assert outcome.code == 2
    assert "invalid model 'gpt-4o'" in outcome.err and "(from ASSEMBLER_MODEL)" in outcome.err


@pytest.mark.parametrize(
    ("args", "extra", "message"),
    [
        (["--model", "nocolon"], "", "invalid model 'nocolon': use the form provider:model"),
        (["--model", "nosuch:m"], "", "unknown model provider 'nosuch'"),
    ],
)
def test_a_model_that_cannot_work_is_a_usage_error_reported_once(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    extra: str,
    message: str,
) -> None:
    path = agent(tmp_path, extra)
    for command in (["run", str(path), "--no-session", "-p", "hi"], ["rpc", str(path)]):
        outcome = assemble(capsys, *command, *args)
        assert outcome.code == 2, outcome.err
        assert outcome.err.count(message) == 1, outcome.err
        assert outcome.out == ""


def test_eval_checks_the_model_once_before_any_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "agent.yaml").write_text(AGENT.replace("workspace: .", "workspace: ws"))
    file = tmp_path / "t.eval.yaml"
    tasks = "".join(f"  - {{id: t{n}, prompt: hi}}\n" for n in range(3))
    file.write_text(f"version: 1\nagent: agent.yaml\ntasks:\n{tasks}")
    out = tmp_path / "results.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--model", "nocolon", "--out", str(out))
    assert outcome.code == 2
    assert outcome.err.count("invalid model 'nocolon'") == 1
    assert not out.exists()  # no task ran into it
    outcome = assemble(capsys, "eval", str(file), "--model", "nosuch:m", "--out", str(out))
    assert outcome.code == 2 and outcome.err.count("unknown model provider 'nosuch'") == 1
    outcome = assemble(capsys, "eval", str(file), "--out", str(out))
    assert outcome.code == 2 and outcome.err.count("no model") == 1
    assert not out.exists()


def test_run_render_and_validate_use_agent_yaml_here_when_none_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["run", "--no-session", "-p", "hi"], ["render", "--dry-run"], ["validate"]):
        outcome = assemble(capsys, *command)
        assert outcome.code == 2, outcome.err
        assert "missing MANIFEST: name one, or run where an agent.yaml is" in outcome.err
    agent(tmp_path, "model: scripted:reply.yaml\n")
    validated = assemble(capsys, "validate")
    assert validated.code == 0 and "1 manifest" in validated.out, validated.out
    rendered = assemble(capsys, "render", "--dry-run", "--prompt-only")
    assert rendered.out.startswith("## identity\nYou answer briefly.")
    ran = assemble(capsys, "run", "--no-session", "-p", "hi")
    assert (ran.code, ran.out) == (0, "Hello from the default model.\n")
