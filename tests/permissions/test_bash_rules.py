"""Bash command rules: every way around `allow: ["bash(git status)"]` is refused.

Each bypass attempt is decided by a real policy over a real temporary workspace,
with the default `allow` (so a refusal can only come from the splitter seeing the
extra command) and a deny rule on `rm` (so a hidden command must be asked about),
and once more with `default: ask` and no deny, where an attempt must not be allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy, parse_command_line
from assembler.permissions.wrappers import SHELLS

ALLOW_STATUS = PermissionsSpec(default="ask", allow=("bash(git status)",))

BYPASSES = [
    "git status; rm -rf x",
    "git status && rm x",
    "git status || rm x",
    "git status | sh",
    "git status | bash -s",
    "$(rm x)",
    "git status $(rm x)",
    "git status `rm x`",
    "git status\nrm x",
    # tree-sitter-bash swallows the newline after a pipeline into the last command
    # (found by the property test): the words after it are a command of their own.
    "git status | git status\nrm -rf x && git status",
    "git status | git status | git status\n  rm -rf x",
    "git status\r\nrm x",
    "FOO=1 rm x",
    "FOO=1 git status",
    "PATH=./bin:$PATH git status",
    "env rm x",
    "env git status",
    "bash -c 'rm x'",
    "bash -c 'git status'",
    "sh -c 'rm x'",
    "git status > tests/x",
    "git status >> tests/x",
    "git status &> tests/x",
    "git status 2> tests/x",
    "git status >& tests/x",
    "> tests/x git status",
    "git status >tests/x --short",
    "{ git status; } > tests/x",
    "(git status) > tests/x",
    "cat <(rm x)",
    "git status > >(rm x)",
    "git status <<EOF\n$(rm x)\nEOF\n",
    "git status <<EOF | sh\nrm x\nEOF\n",
    "eval 'rm x'",
    "eval git status",
    "exec rm x",
    "command rm x",
    "nohup rm x",
    "timeout 5 rm x",
    "nice -n 5 rm x",
    "time rm x",
    "stdbuf -oL rm x",
    "xargs git status",
    "sudo git status",
    "git status & rm x",
    "(rm x)",
    "{ rm x; }",
    "! rm x",
    "if git status; then rm x; fi",
    "while git status; do rm x; done",
    "case a in a) rm x;; esac",
    "git() { rm x; }; git status",
    "for git in x; do git status; done",
    "export PATH=.; git status",
    "x=1; git status",
    "$CMD status",
    "${CMD} status",
    "g\\it status; rm x",
    "{git,status}",
    "git status 'unterminated",
    "git status; trap 'rm x' EXIT",
    "alias git=rm; git status",
    "[[ $(rm x) ]]; git status",
    # `[[` is not modeled (its operands are evaluated as arithmetic by `-eq`, `-v` ...):
    # it was allowed before, it is asked about now, whatever it holds.
    "[[ -f README ]] && git status",
    "echo $(( $(cat f) )); git status",
    "echo ${X:=1}; git status",
    "find . -exec rm {} \\;",
    "watch rm x",
    "git status\x00; rm x",
    "/tmp/git status",
    # a wrapper named by its path could be any program; an option it does not take
    # (`timeout -9`) means the command after it is not known
    "/usr/bin/timeout 5 git status",
    "timeout -9 5 git status",
    # wrappers seen through for deny rules only
    "doas git status",
    "coproc git status",
    "exec git status",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    return tmp_path


@pytest.mark.parametrize("command", BYPASSES)
def test_an_allow_rule_never_allows_more_than_it_names(workspace: Path, command: str) -> None:
    policy = PermissionPolicy.from_spec(ALLOW_STATUS, workspace=workspace)
    decision = policy.decide("bash", {"command": command}, None)
    assert decision.verdict == "ask", (command, decision)
    assert decision.unanswered().verdict == "deny"


@pytest.mark.parametrize(
    "command",
    [c for c in BYPASSES if "rm" in c and "'rm x'" not in c and "$(rm" not in c],
)
def test_a_deny_rule_sees_through_wrappers_and_nesting(workspace: Path, command: str) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(rm *)",))
    decision = PermissionPolicy.from_spec(spec, workspace=workspace).decide(
        "bash", {"command": command}, None
    )
    assert decision.verdict in ("deny", "ask"), (command, decision)


@pytest.mark.parametrize(
    "command",
    ["bash -c 'rm x'", "sh -c 'rm -rf /'", "eval 'rm x'", "env FOO=1 rm x", "git status; rm x",
     "echo $(rm x)", "cat <(rm x)", "/bin/rm x", "\\rm x", "r''m x", "sudo -u root rm x",
     "xargs rm", "find . -exec rm {} +", "trap 'rm x' EXIT", "timeout -s KILL 5 rm x",
     "coproc rm x", "timeout --signal=KILL 5 rm x", "sudo -En rm x", "watch -n 1 rm x", "bash -c -- 'rm x'"],
)  # fmt: skip
def test_a_deny_rule_denies_a_visible_command_anywhere(workspace: Path, command: str) -> None:
    spec = PermissionsSpec(default="allow", allow=("bash",), deny=("bash(rm *)",))
    decision = PermissionPolicy.from_spec(spec, workspace=workspace).decide(
        "bash", {"command": command}, None
    )
    assert (decision.verdict, decision.rule) == ("deny", "bash(rm *)"), command


@pytest.mark.parametrize(
    "command", ['eval "$x"', "$CMD x", 'bash -c "$x"', "curl x | sh", "env -S 'rm x'"]
)
def test_what_the_parser_cannot_see_is_asked_not_allowed(workspace: Path, command: str) -> None:
    """Under `default: allow` (and under a bare allow), a deny pattern that cannot be
    ruled out turns the allow into an ask."""
    for spec in (
        PermissionsSpec(default="allow", deny=("bash(rm *)",)),
        PermissionsSpec(default="deny", allow=("bash",), deny=("bash(rm *)",)),
    ):
        decision = PermissionPolicy.from_spec(spec, workspace=workspace).decide(
            "bash", {"command": command}, None
        )
        assert decision.verdict == "ask", (command, decision)
        assert "cannot be checked against `bash(rm *)`" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git  status",
        "git 'status'",
        'git "status"',
        "g'i't status",
        "git status 2>&1",
        "git status 2>/dev/null",
        "git status >/dev/null 2>&1",
        "timeout 5 git status",
        "nice -n 5 git status",
        "time git status",
        "command git status",
        "nohup git status",
        "command -p git status",
        "nice -10 git status",
        "nice -10 -- git status",
        "nohup time -p git status",
        "git status # a comment",
        "git status &",
        "git status <<< input",
        "git status < README",
        "(git status)",
        "{ git status; }",
        "git status; git status",
        "git status && git status || git status",
        "git status | git status",
        "if git status; then git status; fi",
        "! git status && time -p git status",
        "while git status; do git status; done",
        "git status | git status\n",
        "git status <<'EOF'\n$(rm x) `rm x`\nEOF\n",
        'git "status" 2>/dev/null </dev/null',
    ],
)
def test_what_the_rule_names_is_allowed(workspace: Path, command: str) -> None:
    policy = PermissionPolicy.from_spec(ALLOW_STATUS, workspace=workspace)
    decision = policy.decide("bash", {"command": command}, None)
    assert (decision.verdict, decision.rule) == ("allow", "bash(git status)"), command


def test_quoted_operators_are_arguments_not_separators(workspace: Path) -> None:
    line = parse_command_line("git status ';' rm")
    assert [c.text for c in line.commands] == ["git status ; rm"]
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=("bash(git status *)",), deny=("bash(rm *)",)),
        workspace=workspace,
    )
    assert policy.decide("bash", {"command": "git status ';' rm"}, None).verdict == "allow"
    assert policy.decide("bash", {"command": "git status ; rm"}, None).verdict == "deny"


@pytest.mark.parametrize(
    ("pattern", "command", "allowed"),
    [
        ("git diff *", "git diff", True),
        ("git diff *", "git diff HEAD~1 -- src", True),
        ("git diff *", "git diffx", False),
        ("git diff *", "git difftool", False),
        ("git log:*", "git log --oneline", True),
        ("git log:*", "git log", True),
        ("git log:*", "git logx", False),
        ("ls *", "lsof", False),
        ("ls *", "ls -la", True),
        ("git * main", "git merge main", True),
        ("git * main", "git merge dev", False),
        ("python3 -m unittest *", "python3 -m unittest discover -s tests", True),
        ("python3 -m unittest *", "python3 -m pytest", False),
        ("echo 'a b'", 'echo "a b"', True),
        ("echo '*'", "echo x", False),
        ("echo '*'", "echo '*'", True),
        ("npm run test*", "npm run tests", True),
        ("pytest *", "pytest -q && rm x", False),
    ],
)
def test_pattern_semantics(workspace: Path, pattern: str, command: str, allowed: bool) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=(f"bash({pattern})",)), workspace=workspace
    )
    assert (policy.decide("bash", {"command": command}, None).verdict == "allow") is allowed


def test_the_splitter_finds_every_simple_command() -> None:
    line = parse_command_line("a 1; b 2 && c 3 || d | e\nf $(g) <(i) >(j) <<'EOF'\n$(k)\nEOF\n")
    names = sorted(c.words[0] for c in line.commands)
    assert names == ["a", "b", "c", "d", "e", "f", "g", "i", "j"]  # the body is only text
    assert line.allowable and not line.hidden


def test_an_unverifiable_line_is_still_searched_for_deny_rules() -> None:
    # Backquotes and an unquoted here-document body holding `$(...)` are not modeled:
    # the line is hidden (asked about), but what either reading sees can be denied.
    line = parse_command_line("a 1; f `h` <<EOF\n$(k)\nEOF\n")
    assert not line.allowable and line.hidden
    assert {"a", "h", "k"} <= {c.words[0] for c in line.commands}


def test_parses_are_cached() -> None:
    assert parse_command_line("git status --short") is parse_command_line("git status --short")


def test_a_newline_after_a_pipeline_starts_a_new_command() -> None:
    line = parse_command_line("git status | git status\nrm -rf x && git status")
    assert [command.text for command in line.commands] == [
        "git status",
        "git status",
        "rm -rf x",
        "git status",
    ]
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=("bash(git status *)",)), workspace=Path("/")
    )
    decision = policy.decide("bash", {"command": "git status | git status\nrm x"}, None)
    assert decision.verdict == "ask"


def _decide_under_deny(workspace: Path, deny: str, command: str) -> str:
    spec = PermissionsSpec(default="allow", deny=(f"bash({deny})",))
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    return policy.decide("bash", {"command": command}, None).verdict


def test_a_deny_rule_without_a_literal_first_word_is_tried_on_every_command(
    workspace: Path,
) -> None:
    assert _decide_under_deny(workspace, "* --force", "git push --force") == "deny"


def test_rules_keyed_by_their_first_word_still_apply_beside_rules_that_are_not(
    workspace: Path,
) -> None:
    """`git push *` is looked up by its first word, `* --force` is tried on every
    command: with both kinds in one list, each still decides its own commands."""
    spec = PermissionsSpec(
        default="ask",
        allow=("bash(git status)", "bash(* --version)"),
        deny=("bash(git push *)", "bash(* --force)"),
    )
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    decide = lambda command: policy.decide("bash", {"command": command}, None)  # noqa: E731
    assert (decide("git push origin").verdict, decide("git push origin").rule) == (
        "deny",
        "bash(git push *)",
    )
    assert (decide("rm --force").verdict, decide("rm --force").rule) == ("deny", "bash(* --force)")
    assert (decide("git status").verdict, decide("git status").rule) == (
        "allow",
        "bash(git status)",
    )
    assert decide("python --version").verdict == "allow"
    assert decide("git log").verdict == "ask"


def test_an_expansion_after_a_literal_view_is_still_checked_against_deny_rules(
    workspace: Path,
) -> None:
    """`timeout -s $sig 5 echo hi` has a fully known inner view (`echo hi`): the
    checker must go on to `rm $y`, which `rm -rf *` may match once `$y` is known."""
    assert _decide_under_deny(workspace, "rm -rf *", "timeout -s $sig 5 echo hi; rm $y") == "ask"


@pytest.mark.parametrize("command", ["$cmd -rf /", "$cmd"])
def test_an_unknown_command_name_is_asked_about_under_a_deny_rule(
    workspace: Path, command: str
) -> None:
    assert _decide_under_deny(workspace, "rm -rf *", command) == "ask"


def test_a_deny_rule_that_cannot_match_the_expansion_lets_it_run(workspace: Path) -> None:
    assert _decide_under_deny(workspace, "rm -rf *", "echo $y") == "allow"


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_every_shells_command_string_is_searched_for_denied_commands(
    workspace: Path, shell: str
) -> None:
    assert _decide_under_deny(workspace, "rm *", f"{shell} -c 'rm x'") == "deny"


@pytest.mark.parametrize("option", ["-o posix", "+o posix", "-O extglob", "+O extglob",
                                    "--rcfile f", "--init-file f"])  # fmt: skip
def test_a_shell_option_with_a_value_does_not_hide_the_command_string(
    workspace: Path, option: str
) -> None:
    assert _decide_under_deny(workspace, "rm *", f"bash {option} -c 'rm x'") == "deny"


@pytest.mark.parametrize(
    "command",
    [". ./env; ls", "source ./env; ls", "alias ls=rm; ls", "hash -p /bin/rm ls; ls",
     "enable -n echo; echo x"],
)  # fmt: skip
def test_a_line_that_changes_what_names_run_is_asked_under_a_deny_rule(
    workspace: Path, command: str
) -> None:
    assert _decide_under_deny(workspace, "rm *", command) == "ask"


def test_the_reason_names_the_wrapper_whose_options_are_not_understood(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(ALLOW_STATUS, workspace=workspace)
    decision = policy.decide("bash", {"command": "sudo -Z git status"}, None)
    assert "(`sudo` has options that are not understood)" in decision.reason


def test_a_wrapper_with_nothing_to_run_is_not_denied(workspace: Path) -> None:
    assert _decide_under_deny(workspace, "rm *", "timeout 5") == "allow"


def test_a_rule_can_allow_running_a_named_script_with_bash(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=("bash(bash scripts/t.sh)",)), workspace=workspace
    )
    assert policy.decide("bash", {"command": "bash scripts/t.sh"}, None).verdict == "allow"


def test_bash_given_dash_s_after_double_dash_is_asked_under_a_deny_rule(workspace: Path) -> None:
    """The checker reads `bash -- -s` as reading commands from its input (bash would
    run a file named `-s`): either way what runs is not on the line, so it is asked."""
    assert _decide_under_deny(workspace, "rm *", "bash -- -s") == "ask"


def test_bash_dash_c_with_no_string_is_asked_under_a_deny_rule(workspace: Path) -> None:
    assert _decide_under_deny(workspace, "rm *", "bash -c") == "ask"


def test_the_reason_names_the_shell_that_reads_commands_from_its_input(workspace: Path) -> None:
    policy = PermissionPolicy.from_spec(ALLOW_STATUS, workspace=workspace)
    decision = policy.decide("bash", {"command": "bash -s"}, None)
    assert decision.reason == (
        "no rule can allow this line (`bash` runs commands read from its input); the default is ask"
    )
