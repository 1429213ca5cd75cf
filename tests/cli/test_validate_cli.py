"""`assemble validate` as CI runs it: every problem of every file in one run, three
output formats, exit codes 0 / 1 / 2, `--strict`, and the pre-commit hook.

Most tests go through `assembler.cli.main.main` (see `clirun.assemble`), where
errors become messages and exit codes; a traceback fails the test. A few use
click's `CliRunner` on the `cli` group directly.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from clirun import assemble

from assembler.cli.main import cli
from assembler.manifest.yaml_source import MAX_FILE_BYTES

REPO = Path(__file__).resolve().parents[2]

GOOD = "version: 1\nname: good\nidentity: You help.\n"
BAD = "version: 1\nname: bad agent\nidentity: You help.\ndescripton: typo\n"
WARNS = "version: 1\nname: warns\nidentity: Use `patch`.\ntools: {sets: [edit]}\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8")


# --- exit codes and the text format ---------------------------------------------------


def test_a_clean_manifest_exits_0(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(here, {"good.yaml": GOOD})
    outcome = assemble(capsys, "validate", "good.yaml")
    assert (outcome.code, outcome.out, outcome.err) == (0, "1 manifest valid\n", "")


def test_every_problem_of_every_file_in_one_run(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        here,
        {
            "a.yaml": BAD,
            "agents/b.yml": "version: 2\nname: b\nidentity: x\nlimits: {max_turns: 0}\n",
            "agents/c.yaml": GOOD,
            "agents/nested/d.yaml": WARNS,
        },
    )
    outcome = assemble(capsys, "validate", "a.yaml", "agents")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [
        "a.yaml:2:7: error: a name is letters, digits, `.`, `_` and `-`, starting with a letter "
        "or digit [name]",
        "a.yaml:4:1: error: unknown key `descripton`; did you mean `description`? [descripton]",
        "agents/b.yml:1:10: error: unsupported manifest version 2; this assembler reads "
        "`version: 1` [version]",
        "agents/b.yml:4:21: error: must be at least 1, got 0 [limits.max_turns]",
        "agents/nested/d.yaml:3:15: warning: mentions tool `patch`, but no active tool has that "
        "name (active: `edit`) [identity]",
        "4 error(s), 1 warning(s) in 4 manifests",
    ]


def test_line_format_is_file_line_col_severity_message_path(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(here, {"bad.yaml": BAD})
    lines = assemble(capsys, "validate", "bad.yaml").out.splitlines()[:-1]
    pattern = re.compile(r"^bad\.yaml:\d+:\d+: (error|warning): .+ \[[\w.\[\]'-]+\]$")
    assert lines and all(pattern.match(line) for line in lines), lines


def test_warnings_do_not_fail_unless_strict(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(here, {"warns.yaml": WARNS})
    relaxed = assemble(capsys, "validate", "warns.yaml")
    strict = assemble(capsys, "validate", "--strict", "warns.yaml")
    assert relaxed.code == 0
    assert strict.code == 1
    assert relaxed.out == strict.out
    assert relaxed.out.endswith("0 error(s), 1 warning(s) in 1 manifest\n")


def test_strict_with_a_clean_manifest_exits_0(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(here, {"good.yaml": GOOD})
    assert assemble(capsys, "validate", "--strict", "good.yaml").code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "missing MANIFEST: name one, or run where an agent.yaml is"),  # none here
        (("--no-such-option", "x.yaml"), "No such option '--no-such-option'"),
        (("--format", "xml", "x.yaml"), "Invalid value for '--format'"),
        (("--skills-profile", "loose", "x.yaml"), "Invalid value for '--skills-profile'"),
    ],
)
def test_usage_errors_exit_2(
    here: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    outcome = assemble(capsys, "validate", *args)
    assert outcome.code == 2
    assert message in outcome.err
    assert outcome.out == ""


def test_a_path_that_does_not_exist(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "validate", "nowhere")
    assert outcome.code == 1
    assert outcome.out == (
        "nowhere: error: no such file or directory\n1 error(s), 0 warning(s) in 0 manifests\n"
    )
    outcome = assemble(capsys, "validate", "missing.yaml")
    assert outcome.out.splitlines()[0] == "missing.yaml: error: file not found"


# --- files that are not manifests: one clear error each -------------------------------


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]")
    return "\n".join(lines) + "\n"


ONE_ERROR = {
    "too_big": (
        b"version: 1\n" + b"#" * MAX_FILE_BYTES,
        f"f.yaml: error: file is {MAX_FILE_BYTES + 11:,} bytes; manifests are limited to 1 MiB",
    ),
    "long_integer": (
        "version: 1\nname: x\nidentity: y\nlimits: {max_turns: " + "9" * 5000 + "}\n",
        "f.yaml:4:21: error: number literal of 5,000 characters is too long (at most 400); "
        "quote it if it is meant as text",
    ),
    "invalid_utf8": (
        b"version: 1\nname: x\nidentity: caf\xe9 au lait\n",
        "f.yaml:3:14: error: invalid UTF-8 (byte 0xe9); save the file as UTF-8",
    ),
    "empty": (
        b"",
        "f.yaml: error: empty file; a manifest needs at least `version`, `name` and `identity`",
    ),
    "only_a_document_marker": (
        "---\n",
        "f.yaml:2:1: error: empty document; a manifest needs at least `version`, `name` and "
        "`identity`",
    ),
    "binary": (
        b"version: 1\n\x00\x01\x02\x03",
        "f.yaml:2:1: error: binary file (contains a NUL byte); expected UTF-8 YAML",
    ),
    "a_list": (
        "- version: 1\n- name: x\n",
        "f.yaml:1:1: error: a manifest is a YAML mapping of keys to values, not a list",
    ),
    "a_scalar": (
        "just some words\n",
        "f.yaml:1:1: error: a manifest is a YAML mapping of keys to values, not a single value",
    ),
    "alias_bomb": (
        _alias_bomb(),
        "f.yaml:5:29: error: document expands to more than 100,000 values through aliases; "
        "refusing (alias bomb?)",
    ),
    "python_tag": (
        "version: 1\nname: !!python/object/apply:os.system ['true']\nidentity: x\n",
        "f.yaml:2:7: error: custom tag !!python/object/apply:os.system is not allowed in a "
        "manifest",
    ),
    "duplicate_key": (
        GOOD + "name: again\n",
        "f.yaml:4:1: error: duplicate key 'name' (first defined at line 2); YAML would silently "
        "keep only the last one [name]",
    ),
    "syntax": (
        "version: 1\nname: [unclosed\n",
        "f.yaml:3:1: error: YAML syntax error: while parsing a flow sequence did not find "
        "expected ',' or ']'",
    ),
}


@pytest.mark.parametrize("case", sorted(ONE_ERROR))
def test_a_broken_file_is_one_clear_error(
    here: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    content, expected = ONE_ERROR[case]
    _write(here, {"f.yaml": content})
    outcome = assemble(capsys, "validate", "f.yaml")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [expected, "1 error(s), 0 warning(s) in 1 manifest"]
    assert outcome.err == ""


def test_a_directory_without_manifests_is_one_error(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        here,
        {
            "config/ci.yml": "on: push\njobs: {}\n",
            "config/README.md": "# not yaml",
            "config/.hidden/agent.yaml": GOOD,
        },
    )
    outcome = assemble(capsys, "validate", "config")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [
        "config: error: no agent manifests found in this directory",
        "1 error(s), 0 warning(s) in 0 manifests",
    ]


def test_directories_find_manifests_and_skip_other_yaml(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        here,
        {
            "agents/a.yaml": GOOD,
            "agents/b.yml": "# yaml-language-server: $schema=../schemas/agent.schema.json\n"
            "# no identity key here\nversion: 1\nname: b\n",
            "agents/replies.script.yaml": "- text: hello\n",
            "agents/ci.yaml": "jobs: {}\n",
            "agents/node_modules/x/agent.yaml": BAD,
            "agents/.cache/agent.yaml": BAD,
            "agents/venv/agent.yaml": BAD,
        },
    )
    outcome = assemble(capsys, "validate", "agents")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [
        "agents/b.yml:3:1: error: missing required key `identity`",
        "1 error(s), 0 warning(s) in 2 manifests",
    ]


def test_a_file_named_on_the_command_line_is_always_a_manifest(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(here, {"ci.yaml": "jobs: {}\n"})
    outcome = assemble(capsys, "validate", "ci.yaml")
    assert outcome.code == 1
    assert "unknown key `jobs`" in outcome.out


def test_skill_profile_spec(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(
        here,
        {
            "agent.yaml": GOOD + "skills: [skills]\n",
            "skills/a/SKILL.md": "---\nname: a\ndescription: A.\nauthor: me\n---\n",
        },
    )
    lenient = assemble(capsys, "validate", "agent.yaml")
    spec = assemble(capsys, "validate", "--skills-profile", "spec", "agent.yaml")
    assert (lenient.code, spec.code) == (0, 1)
    message = "unknown field 'author'; the spec allows allowed-tools, compatibility, description"
    assert f"skills/a/SKILL.md:4:1: warning: {message}" in lenient.out
    assert f"skills/a/SKILL.md:4:1: error: {message}" in spec.out


# --- formats --------------------------------------------------------------------------


def test_json_format(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(here, {"bad.yaml": BAD, "warns.yaml": WARNS})
    outcome = assemble(capsys, "validate", "--format", "json", "bad.yaml", "warns.yaml")
    assert outcome.code == 1
    payload = json.loads(outcome.out)
    assert payload["files"] == 2
    assert (payload["errors"], payload["warnings"]) == (2, 1)
    assert payload["issues"][1] == {
        "file": "bad.yaml",
        "line": 4,
        "column": 1,
        "severity": "error",
        "message": "unknown key `descripton`; did you mean `description`?",
        "path": "descripton",
    }
    assert [i["file"] for i in payload["issues"]] == ["bad.yaml", "bad.yaml", "warns.yaml"]


def test_json_format_when_clean(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(here, {"good.yaml": GOOD})
    outcome = assemble(capsys, "validate", "--format", "json", "good.yaml")
    assert outcome.code == 0
    assert json.loads(outcome.out) == {
        "files": 1,
        "manifests": 1,
        "eval_files": 0,
        "errors": 0,
        "warnings": 0,
        "issues": [],
    }


def test_github_format_is_workflow_commands(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(
        here,
        {
            "bad.yaml": BAD,
            "w,1.yaml": WARNS,
            "pct.yaml": GOOD + "limits: {max_turns: 0}\nworkspace: '100%'\n",
        },
    )
    outcome = assemble(capsys, "validate", "--format", "github", "bad.yaml", "w,1.yaml", "pct.yaml")
    assert outcome.code == 1
    assert outcome.out.splitlines() == [
        "::error file=bad.yaml,line=2,col=7,title=assemble validate::a name is letters, digits, "
        "`.`, `_` and `-`, starting with a letter or digit [name]",
        "::error file=bad.yaml,line=4,col=1,title=assemble validate::unknown key `descripton`; "
        "did you mean `description`? [descripton]",
        "::warning file=w%2C1.yaml,line=3,col=15,title=assemble validate::mentions tool `patch`, "
        "but no active tool has that name (active: `edit`) [identity]",
        "::error file=pct.yaml,line=4,col=21,title=assemble validate::must be at least 1, got 0 "
        "[limits.max_turns]",
        f"::error file=pct.yaml,line=5,col=12,title=assemble validate::workspace {here.resolve()}"
        "/100%25 does not exist [workspace]",
        "4 error(s), 1 warning(s) in 3 manifests",
    ]


def test_github_format_escapes_newlines_in_messages() -> None:
    from assembler.errors import Issue
    from assembler.validation.report import Counted, format_github

    issue = Issue("a:b.yaml", 1, 2, "error", "two\nlines\r 50%", "x")
    assert format_github([issue], Counted(1)).splitlines()[0] == (
        "::error file=a%3Ab.yaml,line=1,col=2,title=assemble validate::two%0Alines%0D 50%25 [x]"
    )


# --- click's CliRunner on the group ---------------------------------------------------


def test_cli_runner_exit_codes(here: Path) -> None:
    _write(here, {"good.yaml": GOOD, "bad.yaml": BAD})
    runner = CliRunner()
    clean = runner.invoke(cli, ["validate", "good.yaml"], catch_exceptions=False)
    failing = runner.invoke(cli, ["validate", "good.yaml", "bad.yaml"], catch_exceptions=False)
    usage = runner.invoke(cli, ["validate"], catch_exceptions=False)
    assert (clean.exit_code, clean.output) == (0, "1 manifest valid\n")
    assert failing.exit_code == 1
    assert failing.output.endswith("2 error(s), 0 warning(s) in 2 manifests\n")
    assert usage.exit_code == 2


def test_help_describes_the_exit_codes() -> None:
    result = CliRunner().invoke(cli, ["validate", "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "Exit 0 when clean, 1 on any error" in " ".join(result.output.split())


# --- the pre-commit hook --------------------------------------------------------------


def _hook() -> dict[str, object]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text("utf-8"))
    assert isinstance(hooks, list)
    (hook,) = (h for h in hooks if h["id"] == "assemble-validate")
    assert isinstance(hook, dict)
    return hook


def test_pre_commit_hook_definition() -> None:
    hook = _hook()
    assert hook["entry"] == "assemble validate"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True
    assert hook["name"] and hook["description"]
    files, exclude = re.compile(str(hook["files"])), re.compile(str(hook["exclude"]))

    def selected(path: str) -> bool:
        return bool(files.search(path)) and not exclude.search(path)

    assert selected("agents/reviewer.yaml")
    assert selected("agents/team/reviewer.yml")
    assert selected("services/api/agents/bot.yaml")
    assert not selected("agents/shipping-fixer.script.yaml")
    assert not selected(".github/workflows/ci.yml")
    assert not selected(".pre-commit-config.yaml")
    assert not selected("agents/README.md")
    assert not selected("my_agents/x.yaml")
    # where `assemble init` puts them: agent.yaml and *.eval.yaml anywhere
    assert selected("agent.yaml") and selected("tools/bot/agent.yml")
    assert selected("evals/smoke.eval.yaml") and selected("t.eval.yml")
    assert not selected("agent.script.yaml") and not selected("my-agent.yaml")
    assert not selected("evals/notes.yaml")


def test_pre_commit_hook_on_a_project_init_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook passes the manifest and the eval file `init --template coding` wrote,
    and they validate."""
    hook = _hook()
    files, exclude = re.compile(str(hook["files"])), re.compile(str(hook["exclude"]))
    monkeypatch.chdir(tmp_path)
    assert assemble(capsys, "init", "--template", "coding").code == 0
    selected = sorted(
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*")
        if p.is_file()
        and files.search(p.relative_to(tmp_path).as_posix())
        and not exclude.search(p.relative_to(tmp_path).as_posix())
    )
    assert selected == ["agent.yaml", "evals/smoke.eval.yaml"]
    outcome = assemble(capsys, "validate", *selected)
    assert outcome.code == 0, outcome.out


def test_pre_commit_hook_on_this_repository(
    capsys: pytest.CaptureFixture[str], shipping: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What pre-commit would run on this repository's own agents: it passes."""
    hook = _hook()
    files, exclude = re.compile(str(hook["files"])), re.compile(str(hook["exclude"]))
    monkeypatch.chdir(shipping)
    selected = sorted(
        p.relative_to(shipping).as_posix()
        for p in shipping.rglob("*")
        if p.is_file()
        and files.search(p.relative_to(shipping).as_posix())
        and not exclude.search(p.relative_to(shipping).as_posix())
    )
    assert "agents/shipping-fixer.yaml" in selected
    entry = str(hook["entry"]).split()
    assert entry[0] == "assemble"
    outcome = assemble(capsys, *entry[1:], *selected)
    assert outcome.code == 0, outcome.out


def test_the_usage_text_in_the_hook_file_is_valid_yaml() -> None:
    text = (REPO / ".pre-commit-hooks.yaml").read_text("utf-8")
    usage = "\n".join(
        line.removeprefix("# ") for line in text.splitlines() if line.startswith("#   ")
    )
    config = yaml.safe_load(textwrap.dedent(usage))
    assert config["repos"][0]["hooks"] == [{"id": "assemble-validate"}]


def test_a_file_reached_twice_is_validated_once(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(here, {"agents/bad.yaml": BAD})
    outcome = assemble(capsys, "validate", "agents", "agents/bad.yaml", "./agents/bad.yaml")
    assert outcome.out.splitlines()[-1] == "2 error(s), 0 warning(s) in 1 manifest"


def test_the_summary_names_what_it_counted(capsys: pytest.CaptureFixture[str]) -> None:
    """Manifests, eval files and skills are counted apart (sub-agents and the agent an
    eval file names are checked too, but counted only when named)."""
    repo = Path(__file__).resolve().parents[2]
    eval_file = str(repo / "evals" / "shipping.eval.yaml")
    outcome = assemble(capsys, "validate", str(repo / "agents" / "team" / "lead.yaml"), eval_file)
    assert outcome.out.splitlines()[-1] == "2 files valid: 1 manifest, 1 eval file"
    skills = str(repo / "examples" / "shipping" / "skills")
    outcome = assemble(capsys, "validate", eval_file, skills, "--format", "json")
    counts = json.loads(outcome.out)
    assert (counts["files"], counts["manifests"], counts["eval_files"], counts["skills"]) == (
        1,
        0,
        1,
        1,
    )
    broken = assemble(capsys, "validate", eval_file, str(repo / "agents" / "nowhere.yaml"))
    assert broken.out.splitlines()[-1] == (
        "1 error(s), 0 warning(s) in 2 files: 1 manifest, 1 eval file"
    )
