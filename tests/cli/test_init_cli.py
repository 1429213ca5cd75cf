"""`assemble init`: every template validates, renders and runs at once, names a copy of
the schema for editors, and never overwrites anything."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from clirun import assemble

from assembler.manifest.schema import schema_text
from assembler.starters import SCHEMA_COPY, TEMPLATES, agent_name, starter_files

MODELINE = "# yaml-language-server: $schema=.assembler/agent.schema.json"
WORKING_NOW = ["minimal", "coding", "reviewer"]
LAST_REPLY = {
    "minimal": "`agent.yaml` at a real model for real answers.",
    "coding": "Edit `AGENTS.md` to say how this project really runs its tests.",
    "reviewer": "`model:` in `agent.yaml` at a real model for a real review.",
}


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("template", WORKING_NOW)
def test_a_template_validates_renders_and_runs_at_once(
    template: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    created = assemble(capsys, "init", "starter", "--template", template)
    assert created.code == 0, created.err
    assert created.out.startswith(f"created the {template} agent `starter`:\n")
    assert "  assemble validate starter/agent.yaml\n" in created.out
    manifest = tmp_path / "starter" / "agent.yaml"

    validated = assemble(capsys, "validate", str(manifest))
    assert (validated.code, validated.out, validated.err) == (0, "1 manifest valid\n", "")

    rendered = assemble(capsys, "render", "--dry-run", str(manifest))
    assert rendered.code == 0, rendered.err
    assert rendered.out.startswith("## identity\n")
    assert rendered.err == ""  # no diagnostics: nothing is missing or clashing

    assert '  assemble run starter/agent.yaml --trust -p "..."\n' in created.out
    refused = assemble(capsys, "run", str(manifest), "--no-session", "-p", "Hello?")
    assert refused.code != 0 and "replay script agent.script.yaml" in refused.err
    # the starter's replay calls tools: code of the new project, run once trusted
    ran = assemble(capsys, "run", str(manifest), "--no-session", "--trust", "-p", "Hello?")
    assert ran.code == 0, ran.err
    assert ran.out.rstrip("\n").endswith(LAST_REPLY[template])


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_manifest_names_the_schema_copy_beside_it(template: str, tmp_path: Path) -> None:
    files = starter_files(template, "starter")
    assert files[SCHEMA_COPY] == schema_text()
    manifests = [name for name in files if name.endswith(".yaml") and ".script." not in name]
    manifests = [name for name in manifests if not name.endswith(".eval.yaml")]
    assert "agent.yaml" in manifests
    for name in manifests:
        assert "/" not in name  # beside .assembler/, so the modeline's path is right
        first = files[name].splitlines()[0]
        assert first == MODELINE, name
        assert "$name" not in files[name]


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_starts_with_a_scripted_replay_and_shows_real_models(
    template: str,
) -> None:
    agent = starter_files(template, "starter")["agent.yaml"]
    data = yaml.safe_load(agent)
    assert data["model"] == "scripted:agent.script.yaml"
    for real in ("model: openai:", "model: anthropic:", "model: ollama:"):
        assert f"#   {real}" in agent
    assert "pip install 'agent-assembler[openai]'" in agent
    assert "pip install 'agent-assembler[anthropic]'" in agent


def test_the_coding_template_has_a_context_file_a_skill_and_an_eval(tmp_path: Path) -> None:
    files = starter_files("coding", "starter")
    assert set(files) == {
        SCHEMA_COPY, ".gitignore", "agent.yaml", "agent.script.yaml", "AGENTS.md",
        "skills/fix-a-failing-test/SKILL.md", "evals/smoke.eval.yaml",
    }  # fmt: skip
    evaluation = yaml.safe_load(files["evals/smoke.eval.yaml"])
    assert evaluation["version"] == 1
    assert evaluation["agent"] == "../agent.yaml"
    (task,) = evaluation["tasks"]
    assert task["checks"] == [
        {"tool_called": "read"},
        {"answer_contains": "AGENTS.md"},
        {"unchanged": ["**"]},
    ]
    # the replay passes its own evaluation
    replies = yaml.safe_load(files["agent.script.yaml"])
    assert replies[0]["tool_calls"][0]["name"] == "read"
    assert "AGENTS.md" in replies[-1]["text"]


def test_the_whole_coding_project_validates_eval_file_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert assemble(capsys, "init", str(tmp_path / "p"), "--template", "coding").code == 0
    validated = assemble(capsys, "validate", str(tmp_path / "p"))
    assert validated.code == 0, validated.out


def test_the_team_template_validates_and_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert assemble(capsys, "init", str(tmp_path / "team"), "--template", "team").code == 0
    validated = assemble(capsys, "validate", str(tmp_path / "team"))
    assert (validated.code, validated.out) == (0, "3 manifests valid\n")
    rendered = assemble(capsys, "render", "--dry-run", str(tmp_path / "team" / "agent.yaml"))
    assert rendered.code == 0, rendered.err
    assert "reviewer" in rendered.out and "test-writer" in rendered.out


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "project"
    assert assemble(capsys, "init", str(target)).code == 0
    (target / "agent.yaml").write_text("mine\n")
    before = tree(target)
    again = assemble(capsys, "init", str(target), "--template", "coding")
    assert again.code == 1
    assert again.err == (
        f"error: assemble init never overwrites: {target} already has "
        ".assembler/agent.schema.json, agent.script.yaml, agent.yaml; "
        "choose another directory, or move those files away\n"
    )
    assert tree(target) == before  # not even the files that did not exist were written


def test_one_existing_file_is_enough_to_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "AGENTS.md").write_text("# our notes\n")
    refused = assemble(capsys, "init", str(tmp_path), "--template", "coding")
    assert refused.code == 1
    assert "already has AGENTS.md;" in refused.err
    assert tree(tmp_path) == {"AGENTS.md": hashlib.sha256(b"# our notes\n").hexdigest()}


def test_init_writes_a_gitignore_and_keeps_one_already_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    created = assemble(capsys, "init", str(tmp_path / "new"))
    assert created.code == 0
    ignored = (tmp_path / "new" / ".gitignore").read_text().splitlines()
    assert [line for line in ignored if not line.startswith("#")] == [
        "eval-results/",
        "__pycache__/",
    ]
    assert "new/.gitignore" in created.out
    own = tmp_path / "own"
    own.mkdir()
    (own / ".gitignore").write_text("__pycache__\n*.log\n")
    kept = assemble(capsys, "init", str(own), "--template", "coding")
    assert kept.code == 0, kept.err
    assert (own / ".gitignore").read_text() == "__pycache__\n*.log\n"
    assert "kept your .gitignore; you may add: eval-results/\n" in kept.out
    assert (own / "evals" / "smoke.eval.yaml").is_file()


def test_init_into_an_existing_directory_of_other_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    assert assemble(capsys, "init", str(tmp_path), "--template", "reviewer").code == 0
    assert (tmp_path / "src" / "app.py").read_text() == "print('hi')\n"
    assert (tmp_path / "agent.yaml").is_file()


def test_names_come_from_the_directory_or_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agent_name(tmp_path / "My Project!") == "My-Project"
    assert agent_name(tmp_path / "...") == "my-agent"
    assert assemble(capsys, "init", str(tmp_path / "a"), "--name", "helper").code == 0
    assert yaml.safe_load((tmp_path / "a" / "agent.yaml").read_text())["name"] == "helper"
    bad = assemble(capsys, "init", str(tmp_path / "b"), "--name", "-bad name")
    assert bad.code == 1
    assert "invalid agent name '-bad name'" in bad.err
    assert not (tmp_path / "b").exists()


def test_a_file_in_the_way_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("")
    result = assemble(capsys, "init", str(tmp_path / "taken"))
    assert (result.code, result.err) == (
        1,
        f"error: {tmp_path / 'taken'} exists and is not a directory\n",
    )


def test_init_help_ends_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    result = assemble(capsys, "init", "--help")
    assert result.code == 0
    assert "assemble init my-agent --template coding" in result.out
    for template in TEMPLATES:
        assert template in result.out
