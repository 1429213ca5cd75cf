"""Pins for the wrappers the bash check sees through (`permissions/wrappers.py`):
every option each wrapper's table names, several in a row, decided end to end by a
real policy; the program after `--` or a lone `-`; the reasons a line that changes
what later commands run is asked about.

Each was a mutant of `wrappers.py` no test noticed (issue 28, round 7). What each
line runs is checked against the real programs (and real bash for `exec`, `time`,
`command`) where they are installed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from real_bash import bash as run

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.permissions.policy import Decision

DENY_RM = PermissionsSpec(default="allow", deny=("bash(rm *)",))
ALLOW_STATUS = PermissionsSpec(default="ask", allow=("bash(git status)",))
BASH_OWN = ("exec", "time", "command")

#: A wrapper with several options of each kind its table knows: flags, a value in the
#: next word, `--name=value`, a value attached (`-oL`), flags run together (`-cl`),
#: assignments.
WITH_OPTIONS = [
    "timeout --foreground -v 5",
    "timeout -s KILL -k 5 10",
    "timeout --signal=KILL --kill-after=5 10",
    "stdbuf -oL -eL",
    "stdbuf -i 0 -o L",
    "env -i -u HOME A=1 B=2",
    "env --unset=HOME -C /",
    "exec -cl -a name",
    "xargs -0t -n 1 -a /dev/null",
    "xargs --null --max-args=1 --arg-file=/dev/null",
    "time -p",
    "command -p",
    "nice -n 5 --",
    "doas -u root -n",
    "sudo -u root -E -n",
]
#: Wrappers that allow rules see through too.
TRANSPARENT = [
    w for w in WITH_OPTIONS if w.split(" ", 1)[0] in ("timeout", "stdbuf", "nice", "time")
]


def decide(workspace: Path, command: str, spec: PermissionsSpec) -> Decision:
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    return policy.decide("bash", {"command": command}, None)


def installed(program: str) -> bool:
    return (
        sys.platform.startswith("linux")
        and shutil.which("bash") is not None
        and (program in BASH_OWN or shutil.which(program) is not None)
    )


def skip_unless_installed(wrapper: str) -> None:
    program = wrapper.split(" ", 1)[0]
    if not installed(program):
        pytest.skip(f"{program} is not installed")


@pytest.mark.parametrize("wrapper", WITH_OPTIONS)
def test_a_deny_rule_sees_through_every_option_a_wrapper_takes(
    tmp_path: Path, wrapper: str
) -> None:
    decision = decide(tmp_path, f"{wrapper} rm x", DENY_RM)
    assert (decision.verdict, decision.rule) == ("deny", "bash(rm *)"), wrapper


@pytest.mark.parametrize("wrapper", WITH_OPTIONS)
def test_the_wrapper_really_runs_the_command_after_its_options(
    tmp_path: Path, wrapper: str
) -> None:
    skip_unless_installed(wrapper)
    done = run(f"{wrapper} printf ran", tmp_path)
    assert done.stdout == "ran", (wrapper, done.stderr)


@pytest.mark.parametrize("wrapper", TRANSPARENT)
def test_an_allow_rule_sees_through_the_options_of_a_transparent_wrapper(
    tmp_path: Path, wrapper: str
) -> None:
    decision = decide(tmp_path, f"{wrapper} git status", ALLOW_STATUS)
    assert (decision.verdict, decision.rule) == ("allow", "bash(git status)"), wrapper


#: What runs after the wrapper is not `printf`: the word after `--` is the program
#: even when it starts with `-`; so is a lone `-`; `nohup` takes no options.
NOT_THE_COMMAND = ["nice -- -n 5", "nohup -", "nohup --version"]


@pytest.mark.parametrize("wrapper", NOT_THE_COMMAND)
def test_a_word_the_wrapper_runs_as_its_program_is_not_seen_through(
    tmp_path: Path, wrapper: str
) -> None:
    decision = decide(tmp_path, f"{wrapper} git status", ALLOW_STATUS)
    assert decision.verdict == "ask", (wrapper, decision)


@pytest.mark.parametrize("wrapper", NOT_THE_COMMAND)
def test_the_wrapper_really_does_not_run_the_command_after_that_word(
    tmp_path: Path, wrapper: str
) -> None:
    skip_unless_installed(wrapper)
    assert "ran" not in run(f"{wrapper} printf ran", tmp_path).stdout


@pytest.mark.parametrize("wrapper", ["env", "env -i", "nohup", "nice", "stdbuf -oL"])
def test_a_wrapper_with_nothing_after_its_options_is_decided(tmp_path: Path, wrapper: str) -> None:
    assert decide(tmp_path, wrapper, DENY_RM).verdict == "allow"


@pytest.mark.parametrize("name", ["alias", "hash", "enable", "source", "."])
def test_the_question_says_the_line_changes_what_later_commands_run(
    tmp_path: Path, name: str
) -> None:
    decision = decide(tmp_path, f"{name} x; git status", ALLOW_STATUS)
    assert decision.verdict == "ask"
    assert f"`{name}` changes what later commands run" in decision.reason


def test_no_allow_rule_covers_xargs_which_adds_arguments_from_its_input(tmp_path: Path) -> None:
    spec = PermissionsSpec(default="ask", allow=("bash(xargs printf ran)",))
    decision = decide(tmp_path, "xargs printf ran", spec)
    assert decision.verdict == "ask"
    assert "`xargs` adds arguments read from its input" in decision.reason
    if installed("xargs"):
        assert run("echo more | xargs printf 'ran %s'", tmp_path).stdout == "ran more"


def test_a_command_string_after_double_dash_is_still_read_as_bash(tmp_path: Path) -> None:
    """`bash -c -- CODE` is modeled bash: nothing hidden, so a line a deny rule
    cannot match runs under `default: allow`."""
    assert decide(tmp_path, "bash -c -- 'printf ran'", DENY_RM).verdict == "allow"
    if installed("bash"):
        assert run("bash -c -- 'printf ran'", tmp_path).stdout == "ran"


#: Lines that run their string as code although an option or `--` comes first; each
#: was allowed under `deny: [bash(rm *)]` before round 7 (`{}` is the command).
STRING_AFTER_OPTIONS = ["trap -- '{}' EXIT", "eval -- '{}'"]


@pytest.mark.parametrize("line", STRING_AFTER_OPTIONS)
def test_a_deny_rule_sees_the_string_after_double_dash(tmp_path: Path, line: str) -> None:
    decision = decide(tmp_path, line.format("rm x"), DENY_RM)
    assert (decision.verdict, decision.rule) == ("deny", "bash(rm *)")


@pytest.mark.parametrize("line", STRING_AFTER_OPTIONS)
def test_real_bash_runs_the_string_after_double_dash(tmp_path: Path, line: str) -> None:
    skip_unless_installed("bash")
    assert run(line.format("printf ran"), tmp_path).stdout == "ran"


@pytest.mark.parametrize(
    "line",
    ["trap - EXIT", "trap -- - EXIT", "trap -p EXIT", "trap -l", 'trap -p "$sig"',
     'trap - "$sig"', "trap", "trap --", "trap -x"],
)  # fmt: skip
def test_a_trap_that_resets_or_prints_runs_nothing(tmp_path: Path, line: str) -> None:
    assert decide(tmp_path, line, DENY_RM).verdict == "allow"


#: Every option of procps `watch` (`-d` takes a value only after `=`); before round 7
#: an option missing from the table hid the command and the line was allowed.
@pytest.mark.parametrize(
    "wrapper",
    ["watch -c -t", "watch --color", "watch -d", "watch -w -q 1", "watch -n1 -x -b",
     "watch --interval=1 --no-wrap", "watch -e -g -p"],
)  # fmt: skip
def test_a_deny_rule_sees_through_every_option_of_watch(tmp_path: Path, wrapper: str) -> None:
    decision = decide(tmp_path, f"{wrapper} rm x", DENY_RM)
    assert (decision.verdict, decision.rule) == ("deny", "bash(rm *)"), wrapper


@pytest.mark.parametrize("wrapper", ["watch --bogus", "watch $o", "watch --differences=permanent"])
def test_watch_with_an_option_not_understood_is_asked_about(tmp_path: Path, wrapper: str) -> None:
    decision = decide(tmp_path, f"{wrapper} rm x", DENY_RM)
    assert decision.verdict == "ask", wrapper
    assert "cannot be checked against `bash(rm *)`" in decision.reason


def test_eval_reads_its_string_as_the_modeled_bash_and_watch_does_not(tmp_path: Path) -> None:
    """`eval` runs its string in this very bash; `watch` hands it to `sh -c`, whose
    reading the checker does not model: nothing it finds there rules a deny out."""
    assert decide(tmp_path, "eval 'echo hi'", DENY_RM).verdict == "allow"
    assert decide(tmp_path, "watch echo hi", DENY_RM).verdict == "ask"


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ('bash "$script"', "ask"),  # the script run is known only when it runs
        ('bash ./build.sh "$target"', "allow"),  # an argument to a named script hides nothing
        ("bash -l -c 'echo hi'", "ask"),  # a login shell reads profiles first: not modeled
        ("bash -c 'echo hi'", "allow"),
    ],
)
def test_what_a_shell_hides_from_a_deny_rule(tmp_path: Path, command: str, verdict: str) -> None:
    assert decide(tmp_path, command, DENY_RM).verdict == verdict, command


def test_a_word_after_double_dash_is_the_script_a_shell_runs(tmp_path: Path) -> None:
    """`bash -- -c 'rm x'` runs a script file named `-c` (like `bash ./-c 'rm x'`),
    not the string: the string is an argument."""
    assert decide(tmp_path, "bash -- -c 'rm x'", DENY_RM).verdict == "allow"
    skip_unless_installed("bash")
    assert "ran" not in run("bash -- -c 'printf ran'", tmp_path).stdout


@pytest.mark.parametrize(
    ("command", "words"),
    [("bash -c 'git status'", "`bash` runs a command string"),
     ("eval 'git status'", "`eval` runs a string as shell code")],
)  # fmt: skip
def test_the_question_names_what_runs_a_string(tmp_path: Path, command: str, words: str) -> None:
    decision = decide(tmp_path, command, ALLOW_STATUS)
    assert decision.verdict == "ask"
    assert words in decision.reason


@pytest.mark.parametrize(
    "line", ["trap 'rm x' EXIT", "trap -- 'rm x' INT EXIT", "trap -x 'rm x' EXIT"]
)
def test_the_action_of_trap_is_its_first_argument_alone(tmp_path: Path, line: str) -> None:
    """The action is one word, the signals after it are not part of it (so a rule
    naming exactly `rm x` sees it); after an option bash does not know (it refuses the
    line) the next word is still read as the action: more than bash runs, never less."""
    spec = PermissionsSpec(default="allow", deny=("bash(rm x)",))
    decision = decide(tmp_path, line, spec)
    assert (decision.verdict, decision.rule) == ("deny", "bash(rm x)"), line
