"""Pins for the bash grammar (`permissions/bash_grammar.py`): the nesting bound, what
follows `&&`, `|` and `time` without a blank, lines bash refuses as syntax errors,
redirections the checker must name or may let through, a redirection with no command.
Each bash behaviour they rest on is checked against the real bash.

Each was a mutant of `bash_grammar.py` no test noticed (issue 28, round 7).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from real_bash import bash

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.permissions.bash_grammar import MAX_DEPTH, recognize
from assembler.permissions.bash_reader import Unverifiable

needs_bash = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("bash") is None, reason="real bash"
)
ALLOW_STATUS = PermissionsSpec(default="ask", allow=("bash(git status)",))


def commands(line: str) -> list[list[str]]:
    return [[w.value for w in c.words] for c in recognize(line).commands]


def unverifiable(line: str) -> str:
    with pytest.raises(Unverifiable) as raised:
        recognize(line)
    return raised.value.reason


def subshells(levels: int) -> str:
    return "( " * levels + "true" + " )" * levels  # `((` would be arithmetic


def substitutions(levels: int) -> str:
    return "echo " + "$(echo " * levels + "x" + ")" * levels


def test_nesting_is_read_up_to_the_bound_and_asked_about_past_it() -> None:
    """Each command and each `$(...)` is a level: 39 subshells around a command are 40
    levels, 19 substitutions in `echo` are 39; one more of either is past the bound,
    also after commands that came and went at the top level."""
    assert MAX_DEPTH == 40  # the documented bound; the lines below are built on it
    assert commands(subshells(39)) == [["true"]]
    assert "nested more than 40 levels deep" in unverifiable(subshells(40))
    assert len(commands(substitutions(19))) == 20
    assert "nested more than 40 levels deep" in unverifiable(substitutions(20))
    assert "nested more than 40" in unverifiable("true; $(true); " * 5 + subshells(40))


def test_a_long_line_of_commands_is_not_nesting() -> None:
    line = "; ".join(["true", "echo $(true)", "(true)"] * 30)
    assert len(commands(line)) == 120


@needs_bash
def test_real_bash_runs_the_nesting_read(tmp_path: Path) -> None:
    assert bash(subshells(40), tmp_path).returncode == 0
    assert bash(substitutions(20), tmp_path).stdout == "x\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("git status &&rm x", [["git", "status"], ["rm", "x"]]),
        ("git status ||rm x", [["git", "status"], ["rm", "x"]]),
        ("git status &&\nrm x", [["git", "status"], ["rm", "x"]]),
        ("git status |\nrm x", [["git", "status"], ["rm", "x"]]),
        ("time(rm x)", [["rm", "x"]]),
        ("time -p(rm x)", [["rm", "x"]]),
        ('echo "2">/dev/null', [["echo", "2"]]),  # a quoted 2 is a word, not a descriptor
        ("echo a>/dev/null", [["echo", "a"]]),
        ("(rm x) 12>/dev/null", [["rm", "x"]]),
        ("cat <<'EOF' $(echo x)\nhi\nEOF\n", [["echo", "x"], ["cat", "\x00"]]),
    ],
)
def test_what_follows_without_a_blank_is_read(line: str, expected: list[list[str]]) -> None:
    assert commands(line) == expected


@needs_bash
@pytest.mark.parametrize(
    ("line", "stdout"),
    [
        ("true &&printf ran", "ran"),
        ("true &&\nprintf ran", "ran"),
        ("printf ran |\ncat", "ran"),
        ("time(printf ran)", "ran"),
        ("time -p(printf ran)", "ran"),
        ('echo "2">f; cat f', "2\n"),
        ("(printf ran) 12>/dev/null", "ran"),
        ("cat <<'EOF' $(echo -)\nran\nEOF\n", "ran\n"),
    ],
)
def test_real_bash_reads_them_so(tmp_path: Path, line: str, stdout: str) -> None:
    assert bash(line, tmp_path).stdout == stdout


#: Lines bash refuses (`bash -n` exits 2): the checker must not read a command from them.
SYNTAX_ERRORS = ["; rm x", "git status && ; rm x", "git status | | rm x", "echo a > #x",
                 "echo a >", "echo a > ;"]  # fmt: skip


@pytest.mark.parametrize("line", SYNTAX_ERRORS)
def test_a_syntax_error_is_unverifiable(line: str) -> None:
    unverifiable(line)


@needs_bash
@pytest.mark.parametrize("line", SYNTAX_ERRORS)
def test_real_bash_refuses_the_syntax_error(tmp_path: Path, line: str) -> None:
    assert bash(line, tmp_path, "-n").returncode == 2


def test_arithmetic_after_a_line_continuation_is_unverifiable() -> None:
    """`(\\<newline>(x))` is `((x))` once the continuation is removed."""
    assert "arithmetic" in unverifiable("(\\\n(x))")


@pytest.mark.parametrize(
    "line",
    ["cat <<'EOF'", ">/dev/null if true"],
)
def test_a_missing_body_and_a_reserved_word_after_a_redirection_are_unverifiable(
    line: str,
) -> None:
    unverifiable(line)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("git status > out.txt", "the redirection `> out.txt` touches a file"),
        ("{ git status; } > out.txt", "the redirection `> out.txt` touches a file"),
        ("git status < /etc/passwd", "the redirection `< /etc/passwd` touches a file"),
        ("git status < ../secret", "the redirection `< ../secret` touches a file"),
        ("git status < /dev/stdout", "the redirection `< /dev/stdout` touches a file"),
        ("git status; > tests/x", "the redirection `> tests/x` touches a file"),
    ],
)
def test_a_redirection_to_a_file_is_named_and_never_allowed(
    tmp_path: Path, line: str, problem: str
) -> None:
    policy = PermissionPolicy.from_spec(ALLOW_STATUS, workspace=tmp_path)
    decision = policy.decide("bash", {"command": line}, None)
    assert decision.verdict == "ask", line
    assert problem in decision.reason


@pytest.mark.parametrize(
    "line",
    ["git status <&0", "git status <&-", "git status 0<&-", "(git status) 12>/dev/null"],
)
def test_duplicating_closing_or_silencing_a_descriptor_is_allowed(
    tmp_path: Path, line: str
) -> None:
    policy = PermissionPolicy.from_spec(ALLOW_STATUS, workspace=tmp_path)
    assert policy.decide("bash", {"command": line}, None).verdict == "allow", line
