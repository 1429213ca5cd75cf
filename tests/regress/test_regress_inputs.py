"""What converting writes and refuses: plain files a person can edit, secrets scrubbed
(counted), `--workspace DIR` for a workspace that cannot be rebuilt, one clear error
for a session from a newer format, a torn session file, a workspace that is gone; the
`outcome` mode and `--model`; the command line."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import yaml
from clirun import assemble
from regress_project import (
    MANIFEST,
    PROMPT,
    SCRIPT,
    edit_file,
    failure,
    git,
    record,
    replay_one,
    restore_workspace,
    to_test,
)

from assembler.agent.build import build_agent
from assembler.errors import ConversionError
from assembler.regress.convert import ConvertOptions, convert
from assembler.testing import ScriptedModel, text, tool_call

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0L1m2"
TOKEN = "ghp_" + "x" * 36


def test_what_converting_writes_reads_back_as_plain_data(project: Path) -> None:
    session = record(project)
    restore_workspace(project)
    conversion = to_test(session, project / "evals" / "fix.eval.yaml")
    folder = project / "evals" / "fix.replay"
    assert {p.name.split(".", 1)[1] for p in folder.iterdir()} == {
        "script.yaml",
        "expected.json",
        "start.json",
    }
    document = yaml.safe_load(conversion.eval_file.read_text("utf-8"))
    (task,) = document["tasks"]
    assert task["prompt"] == PROMPT
    assert task["replay"]["mode"] == "strict"
    checks = {next(iter(check)): next(iter(check.values())) for check in task["checks"]}
    assert checks["tool_sequence"] == ["bash", "read", "edit", "edit", "bash"]
    assert "math.ceil(weight_kg)" in checks["files_equal"]["shipping/fees.py"]
    assert checks["answer_contains"] == "Fixed: started kilograms round up, and the tests pass."
    script = yaml.safe_load(next(folder.glob("*.script.yaml")).read_text("utf-8"))
    assert [step["id"] for step in script] == [f"turn {n}" for n in range(1, 7)]
    expected = json.loads(next(folder.glob("*.expected.json")).read_text("utf-8"))
    assert expected["format"] == 1 and len(expected["steps"]) == 6
    # short texts whole (so a diff shows both sides), placeholders for this machine's paths
    (prompt,) = expected["prompts"]
    workspace_section = next(s for s in prompt["sections"] if s["name"] == "workspace")
    assert workspace_section["text"].startswith("{workspace}\n")
    assert str(project) not in json.dumps(expected)


def test_a_person_may_edit_the_expected_texts(project: Path) -> None:
    """An expected text is hashed again when read: editing it is editing the test."""
    session = record(project)
    restore_workspace(project)
    eval_file = to_test(session, project / "evals" / "fix.eval.yaml").eval_file
    (expected,) = (project / "evals" / "fix.replay").glob("*.expected.json")
    edit_file(expected, "You are a careful maintainer", "You are a thorough maintainer")
    run = replay_one(eval_file)
    assert failure(run).startswith(
        "turn 1: section `identity` changed: - `You are a thorough maintainer"
    ), failure(run)


def test_secrets_are_scrubbed_from_everything_written_and_counted(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIXER_DEPLOY_KEY", "deploy-key-0123456789")
    manifest = MANIFEST.replace("tools:\n", "tools:\n  env:\n    passthrough: [FIXER_DEPLOY_KEY]\n")
    (project / "agents" / "fixer.yaml").write_text(manifest, "utf-8")
    (project / "examples" / "shipping" / "settings.ini").write_text(
        f"api_key = {SECRET}\ntoken: {TOKEN}\n", "utf-8"
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "settings")
    session = record(
        project,
        [
            tool_call("read", path="settings.ini"),
            tool_call("bash", command="echo deploying with $FIXER_DEPLOY_KEY"),
            text(f"The key is {SECRET}."),
        ],
        "What is in settings.ini?",
    )
    conversion = to_test(session, project / "evals" / "keys.eval.yaml")
    written = "".join(
        content if isinstance(content, str) else content.decode("utf-8", "replace")
        for content in conversion.files.values()
    )
    assert SECRET not in written and TOKEN not in written
    assert "deploy-key-0123456789" not in written
    assert "[scrubbed:FIXER_DEPLOY_KEY]" in written
    assert conversion.scrubber.counts["API key"] >= 2
    assert conversion.scrubber.counts["GitHub token"] >= 1
    assert conversion.scrubber.summary().startswith(f"{conversion.scrubber.total} secrets scrubbed")
    # the replay scrubs what the agent sends the same way: the same secrets compare equal
    run = replay_one(conversion.eval_file)
    assert failure(run) == "3 replies, every request as recorded"


def test_a_workspace_outside_git_needs_a_workspace_folder(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    shutil.copytree(Path(__file__).resolve().parents[2] / "agents", project / "agents")
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples", project / "examples")
    (project / "agents" / "fixer.yaml").write_text(MANIFEST, "utf-8")
    (project / "agents" / "fixer.script.yaml").write_text("- text: unused\n", "utf-8")
    (project / "extra-skills").mkdir()
    pristine = tmp_path / "pristine"
    shutil.copytree(project / "examples" / "shipping", pristine)
    session = record(project)
    out = project / "evals" / "fix.eval.yaml"
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=out))
    assert "cannot be rebuilt" in str(caught.value) and "--workspace DIR" in str(caught.value)
    conversion = to_test(session, out, workspace=pristine)
    assert "\n  start: " not in conversion.eval_file.read_text("utf-8")
    assert "workspace: ../../pristine" in conversion.eval_file.read_text("utf-8")
    run = replay_one(conversion.eval_file)
    assert run.status == "passed", failure(run)


def test_a_workspace_that_is_gone_is_one_clear_error(project: Path, tmp_path: Path) -> None:
    session = record(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=elsewhere / "evals" / "fix.eval.yaml"))
    message = str(caught.value)
    assert "started at commit" in message and "does not have it" in message
    assert "--workspace DIR" in message
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=tmp_path / "nogit" / "fix.eval.yaml"))
    assert "is not in a git work tree" in str(caught.value)


def test_a_torn_session_file_is_refused(project: Path) -> None:
    session = record(project)
    with session.open("a", encoding="utf-8") as file:
        file.write('{"id": "abc", "parent": null, "type": "mess')
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=project / "evals" / "fix.eval.yaml"))
    assert "cannot be read (a torn or corrupt write)" in str(caught.value)
    assert "--fork" in str(caught.value)


def test_a_session_of_a_newer_format_is_refused(project: Path) -> None:
    session = record(project)
    lines = session.read_text("utf-8").split("\n")
    header = json.loads(lines[0])
    header["version"] = 99
    session.write_text("\n".join([json.dumps(header), *lines[1:]]), "utf-8")
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=project / "evals" / "fix.eval.yaml"))
    assert "99" in str(caught.value)


def test_expected_inputs_of_a_newer_format_are_an_eval_file_error(project: Path) -> None:
    session = record(project)
    restore_workspace(project)
    eval_file = to_test(session, project / "evals" / "fix.eval.yaml").eval_file
    (expected,) = (project / "evals" / "fix.replay").glob("*.expected.json")
    edit_file(expected, '"format": 1', '"format": 7')
    outcome = assemble_eval_validate(eval_file)
    assert "expected inputs of format 7; this assembler reads format 1" in outcome


def assemble_eval_validate(eval_file: Path) -> str:
    from assembler.eval.load import validate_eval_file

    report = validate_eval_file(eval_file)
    return "\n".join(issue.format() for issue in report.issues)


def test_outcome_mode_reports_the_divergence_and_counts_only_the_checks(project: Path) -> None:
    session = record(project)
    restore_workspace(project)
    eval_file = to_test(session, project / "evals" / "fix.eval.yaml", mode="outcome").eval_file
    edit_file(project / "agents" / "fixer.yaml", "careful maintainer", "hasty maintainer")
    run = replay_one(eval_file)
    assert run.status == "passed", run.first_failure()
    assert "replay" not in [check.kind for check in run.checks]
    assert run.replay.startswith("turn 1: section `identity` changed")
    assert run.replay.endswith("(and 5 more)")  # the same change, at each of the 6 turns


def test_model_runs_the_same_task_against_another_model(project: Path) -> None:
    session = record(project)
    restore_workspace(project)
    eval_file = to_test(session, project / "evals" / "fix.eval.yaml").eval_file
    other = project / "agents" / "other.script.yaml"
    other.write_text(
        yaml.safe_dump(
            [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]},
                {"text": "Nothing to do."},
            ]
        ),
        "utf-8",
    )
    run = replay_one(eval_file, model=f"scripted:{other}")
    assert run.replay == ""  # no replay: a live eval of the same task
    assert run.status == "failed"
    assert "files differ: shipping/fees.py differs at line 20" in failure(run)


def test_an_existing_output_is_kept_without_force(project: Path) -> None:
    session = record(project)
    restore_workspace(project)
    out = project / "evals" / "fix.eval.yaml"
    to_test(session, out)
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=out)).write()
    assert "already exist" in str(caught.value) and "--force" in str(caught.value)


def test_the_command_line_converts_and_evaluates(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    session = record(project, SCRIPT)
    restore_workspace(project)
    monkeypatch.chdir(project)
    done = assemble(
        capsys,
        "sessions",
        "to-test",
        session.stem,
        "--session-dir",
        ".sessions",
        "--out",
        "evals/fees.eval.yaml",
        "--task-id",
        "fees",
    )
    assert done.code == 0, done.err
    assert "wrote" in done.err and "task `fees`" in done.err and "no secrets found" in done.err
    done = assemble(capsys, "validate", "evals/fees.eval.yaml")
    assert done.code == 0, done.err + done.out
    done = assemble(capsys, "eval", "evals/fees.eval.yaml", "--trust", "--out", "first.jsonl")
    assert done.code == 0, done.err + done.out
    edit_file(project / "agents" / "fixer.yaml", "careful maintainer", "hasty maintainer")
    done = assemble(capsys, "eval", "evals/fees.eval.yaml", "--trust", "--out", "second.jsonl")
    assert done.code != 0
    assert "turn 1: section `identity` changed" in done.err + done.out
    done = assemble(
        capsys, "sessions", "to-test", "nothing-like-this", "--session-dir", ".sessions"
    )
    assert done.code != 0 and "Traceback" not in done.err


def test_a_typed_agents_parameters_are_carried_into_the_test(project: Path) -> None:
    """A session of an agent run with parameter values becomes a task with those values
    (scrubbed like the rest): the replay renders the same prompt, so it passes; with the
    default instead the identity section would diverge."""
    manifest = project / "agents" / "fixer.yaml"
    text_ = (
        manifest.read_text("utf-8")
        .replace(
            "name: fixer\n",
            "name: fixer\nparameters:\n  area: {type: string, default: shipping}\n"
            "  token: {type: string, default: none}\n",
        )
        .replace(
            "limits:\n",
            "prompt:\n  identity:\n    template: |\n"
            "      {{ identity }}\n      You look after {{ area }} ({{ token }}).\nlimits:\n",
        )
    )
    manifest.write_text(text_, "utf-8")
    secret = "ghp_" + "A" * 36
    model = ScriptedModel([text("Nothing to do.")])
    agent = build_agent(manifest, provider=model, session_dir=project / ".sessions", trust=True)

    async def go() -> None:
        async with agent:
            await agent.prompt("Look around.", params={"area": "fees", "token": secret})

    asyncio.run(go())
    assert agent.session is not None
    conversion = to_test(agent.session.path, project / "evals" / "typed.eval.yaml")
    written = (project / "evals" / "typed.eval.yaml").read_text("utf-8")
    assert secret not in written
    (task,) = yaml.safe_load(written)["tasks"]
    assert task["params"]["area"] == "fees"
    assert task["params"]["token"] != secret and "scrubbed" in task["params"]["token"]
    assert conversion is not None
    record_ = replay_one(project / "evals" / "typed.eval.yaml")
    assert record_.status == "passed", failure(record_)
    # not vacuous: the same test run on the defaults diverges in the identity section
    eval_file = project / "evals" / "typed.eval.yaml"
    data = yaml.safe_load(eval_file.read_text("utf-8"))
    del data["tasks"][0]["params"]
    eval_file.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    on_defaults = replay_one(eval_file)
    assert on_defaults.status != "passed"
    assert "identity" in failure(on_defaults), failure(on_defaults)
