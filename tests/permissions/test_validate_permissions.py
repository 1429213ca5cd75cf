"""`assemble validate` on `permissions`: exact lines, positions included."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from assembler.cli.main import cli
from assembler.errors import ManifestError
from assembler.manifest.model import PermissionsSpec
from assembler.validation.validator import validate_file

HEAD = "version: 1\nname: demo\nidentity: x\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _validate(root: Path, body: str) -> list[str]:
    (root / "agent.yaml").write_text(HEAD + body, "utf-8")
    return [issue.format() for issue in validate_file(Path("agent.yaml")).issues]


def test_malformed_rules_are_errors_at_the_wrong_character(project: Path) -> None:
    lines = _validate(
        project,
        'permissions:\n  allow: ["bash(git status", "bash(\'x)", "ba d"]\n  deny:\n    - edit()\n',
    )
    assert lines == [
        "agent.yaml:5:27: error: malformed rule `bash(git status`: the pattern must end with "
        "`)`, as in `bash(git diff *)` [permissions.allow[0]]",
        "agent.yaml:5:36: error: malformed rule `bash('x)`: unclosed ' quote [permissions.allow[1]]",
        "agent.yaml:5:45: error: malformed rule `ba d`: a tool name is letters, digits, `_`, `.`, "
        "`-` (and `*` as a wildcard) [permissions.allow[2]]",
        "agent.yaml:7:12: error: malformed rule `edit()`: empty pattern: write the bare tool name "
        "to match every call [permissions.deny[0]]",
    ]


def test_unknown_tools_are_warnings_with_did_you_mean(project: Path) -> None:
    lines = _validate(project, 'permissions:\n  allow: [Bash, "wirte(src/**)", grep, read]\n')
    active = "(active: `bash`, `edit`, `read`, `write`)"
    assert lines == [
        f"agent.yaml:5:11: warning: no active tool is named `Bash` {active}; did you mean `bash`? "
        "[permissions.allow[0]]",
        f"agent.yaml:5:17: warning: no active tool is named `wirte` {active}; did you mean "
        "`write`? [permissions.allow[1]]",
        f"agent.yaml:5:34: warning: `grep` is a built-in tool this agent does not have {active}; "
        "the rule never applies [permissions.allow[2]]",
    ]


def test_tools_that_may_come_at_run_time_are_not_reported(project: Path) -> None:
    (project / "ext.py").write_text("def setup(api, options):\n    pass\n")
    lines = _validate(
        project,
        "extensions: [{path: ext.py}]\n"
        "tools:\n  sets: [coding, {mcp: gh, prefix: gh_}]\n"
        "  servers: {gh: {command: mcp-server-git}}\n"
        'permissions:\n  deny: [deploy, "mcp:gh/*", "mcp:gh/gh_push", "mcp:gh/push", "mcp:nope/x"]\n',
    )
    assert [line.split(": warning: ")[1] for line in lines if "permissions" in line] == [
        "the tools of `gh` are named with the prefix `gh_`; the rule matches names as the model "
        "sees them, so write `mcp:gh/gh_push` [permissions.deny[3]]",
        "no MCP server named `nope` (`gh`) [permissions.deny[4]]",
    ]


def test_rules_that_never_decide_are_warnings(project: Path) -> None:
    lines = _validate(
        project,
        "permissions:\n"
        '  allow: ["bash(rm -rf *)", "edit(tests/a.py)", "edit(/etc/**)", read, read,'
        ' "bash(git log:*)"]\n'
        '  ask: ["edit(tests/*.py)"]\n'
        '  deny: ["bash(rm *)", "edit(tests/**)", "bash(git log *)"]\n',
    )
    assert [line.split(": warning: ")[1] for line in lines] == [
        "`bash(rm -rf *)` never applies: `bash(rm *)` in `deny` (permissions.deny[0]) matches "
        "the same calls first [permissions.allow[0]]",
        "`edit(tests/a.py)` never applies: `edit(tests/**)` in `deny` (permissions.deny[1]) "
        "matches the same calls first [permissions.allow[1]]",
        "`edit(/etc/**)` can never match: path patterns are relative to the workspace, which "
        "the file tools cannot leave [permissions.allow[2]]",
        "`read` is listed twice in `allow` [permissions.allow[4]]",
        "`bash(git log:*)` never applies: `bash(git log *)` in `deny` (permissions.deny[2]) "
        "matches the same calls first [permissions.allow[5]]",
        "`edit(tests/*.py)` never applies: `edit(tests/**)` in `deny` (permissions.deny[1]) "
        "matches the same calls first [permissions.ask[0]]",
    ]


def test_a_valid_section_loads_into_the_typed_spec(project: Path) -> None:
    lines = _validate(
        project,
        "permissions:\n  default: ask\n"
        '  allow: [read, "bash(git diff *)"]\n  ask: [write]\n  deny: ["edit(tests/**)"]\n',
    )
    assert lines == []
    manifest = validate_file(Path("agent.yaml")).manifest
    assert manifest is not None
    assert manifest.permissions == PermissionsSpec(
        "ask", ("read", "bash(git diff *)"), ("write",), ("edit(tests/**)",)
    )


def test_the_schema_refuses_unknown_keys_and_defaults(project: Path) -> None:
    lines = _validate(project, "permissions:\n  default: maybe\n  alow: [read]\n")
    assert len(lines) == 2 and all("error" in line for line in lines)


def test_load_fails_on_a_malformed_rule_and_the_cli_exits_non_zero(project: Path) -> None:
    from assembler.validation.load import load_manifest

    (project / "agent.yaml").write_text(HEAD + 'permissions:\n  deny: ["bash(rm \'*)"]\n')
    with pytest.raises(ManifestError, match="unclosed ' quote"):
        load_manifest(project / "agent.yaml")
    result = CliRunner().invoke(cli, ["validate", "agent.yaml"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "agent.yaml:5:19: error: malformed rule" in result.output  # at the quote
