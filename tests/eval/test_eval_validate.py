"""`assemble validate` covers eval files: their own schema, files they name, the agent tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project

from assembler.eval.load import validate_eval_file

REPO = Path(__file__).resolve().parents[2]


def messages(path: Path) -> list[str]:
    return [issue.format() for issue in validate_eval_file(path, display=path.name).issues]


def test_the_shipped_eval_files_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "validate", str(REPO / "evals"))
    assert outcome.code == 0, outcome.out
    assert outcome.out.strip() == "2 eval files valid"


def test_the_published_eval_schema_is_the_package_schema() -> None:
    published = REPO / "schemas" / "eval.schema.json"
    package = REPO / "assembler" / "schemas" / "eval.schema.json"
    assert published.read_bytes() == package.read_bytes()
    schema = json.loads(package.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema)


def test_every_problem_of_an_eval_file_in_one_pass(project: Project) -> None:
    bad = project.root / "bad.eval.yaml"
    bad.write_text(
        """\
version: 1
agent: agent.yaml
workspace: nowhere
defaults: {timout: 3}
tasks:
  - id: a
    prompt: hi
    checks:
      - comand: ls
      - {command: ls, answer_contains: x}
      - answer_matches: "(unclosed"
      - unchanged: ["../x", "ok/**"]
      - {tool_called: edit, timeout: 3}
  - id: a
    prompt_file: missing.md
  - id: b
  - id: c d
    prompt: x
    model: scripted:nope.yaml
"""
    )
    assert messages(bad) == [
        "bad.eval.yaml:3:12: error: the workspace nowhere does not exist [workspace]",
        "bad.eval.yaml:4:12: error: unknown key `timout`; did you mean `timeout`? [defaults.timout]",
        "bad.eval.yaml:9:9: error: unknown key `comand`; did you mean `command`? "
        "[tasks[0].checks[0].comand]",
        "bad.eval.yaml:10:9: error: a check is exactly one of `command`, `unchanged`, "
        "`answer_contains`, `answer_matches`, `tool_called`, `tool_not_called`, "
        "`output_matches`, `output_equals`, `files_equal`, `tool_sequence` [tasks[0].checks[1]]",
        # checks the schema accepted are checked although the task is not built
        "bad.eval.yaml:11:25: error: not a valid regular expression: missing ), unterminated "
        "subpattern at position 0 [tasks[0].checks[2].answer_matches]",
        "bad.eval.yaml:12:21: error: `../x` can never match: paths are matched after `..` is "
        "resolved, so a pattern with `..` never matches [tasks[0].checks[3].unchanged[0]]",
        "bad.eval.yaml:13:9: error: `timeout` belongs to a `command` check [tasks[0].checks[4]]",
        "bad.eval.yaml:14:9: error: task id `a` is already used at bad.eval.yaml:6; ids must "
        "be unique [tasks[1].id]",
        f"bad.eval.yaml:15:18: error: the prompt file missing.md does not exist (looked for "
        f"{project.root / 'missing.md'}) [tasks[1].prompt_file]",
        "bad.eval.yaml:16:5: error: a task needs a `prompt` or a `prompt_file`: the agent "
        "`tester` has no `task:` to run [tasks[2]]",
        "bad.eval.yaml:17:9: error: a task id is letters, digits, `.`, `_` and `-`, starting "
        "with a letter or digit [tasks[3].id]",
    ]


def test_an_invalid_check_is_reported_beside_a_file_level_schema_error(
    project: Project,
) -> None:
    bad = project.root / "version.eval.yaml"
    bad.write_text(
        "version: 2\nagent: agent.yaml\ntasks:\n  - id: a\n    prompt: hi\n"
        '    checks:\n      - answer_matches: "[unclosed"\n'
    )
    assert [line.split(": error: ")[0] for line in messages(bad)] == [
        "version.eval.yaml:1:10",
        "version.eval.yaml:7:25",
    ]
    assert "not a valid regular expression: unterminated character set" in messages(bad)[1]


def test_problems_beyond_the_schema(project: Project) -> None:
    (project.root / "empty.md").write_text("  \n")
    path = project.eval_file(
        [
            {
                "id": "a",
                "prompt": "x",
                "model": "scripted:nope.yaml",
                "checks": [{"answer_matches": "(x"}, {"unchanged": ["../out", "/etc/x"]}],
            },
            {"id": "b", "prompt_file": "empty.md"},
        ],
        name="beyond",
    )
    found = [issue.message for issue in validate_eval_file(path).issues]
    assert found == [
        f"the replay script nope.yaml does not exist (looked for {project.root / 'nope.yaml'})",
        "not a valid regular expression: missing ), unterminated subpattern at position 0",
        "`../out` can never match: paths are matched after `..` is resolved, so a pattern "
        "with `..` never matches",
        "`/etc/x` can never match: path patterns are relative to the workspace, which the "
        "file tools cannot leave",
        "the prompt file empty.md is empty",
    ]


def test_a_broken_replay_script_is_reported_where_the_eval_names_it(project: Project) -> None:
    (project.root / "scripts" / "bad.yaml").write_text("- text: [unclosed\n")
    path = project.eval_file([{"id": "a", "prompt": "x", "model": "scripted:scripts/bad.yaml"}])
    [issue] = validate_eval_file(path).issues
    assert issue.message.startswith("the replay script scripts/bad.yaml is invalid: ")
    assert issue.path == "tasks[0].model"


def test_a_tasks_file_is_checked_line_by_line(project: Project) -> None:
    (project.root / "t.jsonl").write_text(
        '{"prompt": "x"}\n'
        '{"id": "bad id", "prompt": "y"}\n'
        '{"prompt": "z", "checks": [{"answer_matches": "("}]}\n'
        "not json\n"
        "\n"
        "[1]\n"
        '{"id": "line-1", "prompt": "dup"}\n'
        '{"prompt_file": "gone.md"}\n'
    )
    path = project.root / "j.eval.yaml"
    path.write_text("version: 1\nagent: agent.yaml\ntasks_file: t.jsonl\n")
    shown = validate_eval_file(path).issues
    # positions are in the tasks file itself, not in the eval file
    assert [(i.file.endswith("t.jsonl"), i.line, i.column, i.message) for i in shown] == [
        (
            True,
            2,
            8,
            "a task id is letters, digits, `.`, `_` and `-`, starting with a letter or digit",
        ),
        (
            True,
            3,
            47,
            "not a valid regular expression: missing ), unterminated subpattern at position 0",
        ),
        (True, 4, 1, "invalid JSON: Expecting value"),
        (True, 6, 1, "a task line is a JSON object"),
        (True, 7, 8, "task id `line-1` is already used on line 1; ids must be unique"),
        (
            True,
            8,
            17,
            f"the prompt file gone.md does not exist (looked for {project.root / 'gone.md'})",
        ),
    ]


def test_a_missing_tasks_file_or_agent_is_an_error(project: Project) -> None:
    path = project.root / "m.eval.yaml"
    path.write_text("version: 1\nagent: nobody.yaml\ntasks_file: none.jsonl\n")
    assert messages(path) == [
        "m.eval.yaml:2:8: error: the agent manifest nobody.yaml does not exist [agent]",
        "m.eval.yaml:3:13: error: the tasks file none.jsonl does not exist [tasks_file]",
    ]
    both = project.root / "both.eval.yaml"
    both.write_text(
        "version: 1\nagent: agent.yaml\ntasks_file: x.jsonl\ntasks: [{id: a, prompt: b}]\n"
    )
    assert messages(both)[0] == (
        "both.eval.yaml:1:1: error: give the tasks either inline (`tasks`) or in a JSON lines "
        "file (`tasks_file`): exactly one of the two"
    )


def test_validate_finds_eval_files_in_a_directory_and_checks_their_agent(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.root)
    (project.root / "agent.yaml").write_text("version: 1\nname: tester\nidentiy: x\n")
    evals = project.root / "evals"
    evals.mkdir()
    (evals / "a.eval.yaml").write_text(
        "version: 1\nagent: ../agent.yaml\ntasks: [{id: a, prompt: b}]\n"
    )
    # an eval file is found by its name, whatever its first lines say
    (evals / "b.eval.yml").write_text("agent: ../agent.yaml\ntasks: [{id: a, prompt: b}]\n")
    outcome = assemble(capsys, "validate", "evals", "agent.yaml")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [
        "agent.yaml:1:1: error: missing required key `identity`",
        "agent.yaml:3:1: error: unknown key `identiy`; did you mean `identity`? [identiy]",
        "evals/b.eval.yml:1:1: error: missing required key `version`",
        "3 error(s), 0 warning(s) in 3 files: 1 manifest, 2 eval files",
    ]
