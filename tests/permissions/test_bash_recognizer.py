"""The recognizer of the bash subset (`bash_grammar`, `bash_words`, `bash_reader`):
what it models, what it reads as unverifiable, and its tables against the real bash.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from assembler.permissions import parse_command_line
from assembler.permissions.bash_builtins import BUILTINS
from assembler.permissions.bash_grammar import RESERVED, recognize
from assembler.permissions.bash_reader import Unverifiable
from assembler.permissions.bash_words import HOLE

needs_bash = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("bash") is None, reason="real bash"
)


def _commands(line: str) -> list[list[str]]:
    return [[w.value for w in c.words] for c in recognize(line).commands]


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("git status", [["git", "status"]]),
        ("g'i't \"st\"a\\tus", [["git", "status"]]),
        ("r\\\nm x", [["rm", "x"]]),  # a continuation is removed before anything else
        ("echo a &\\\n& echo b", [["echo", "a"], ["echo", "b"]]),
        ("echo 'a\\\nb'", [["echo", "a\\\nb"]]),  # ... but not inside single quotes
        ('echo "a\\\nb"', [["echo", "ab"]]),
        ("echo a #c \\\necho b", [["echo", "a"], ["echo", "b"]]),  # nor in a comment
        ("echo a#b", [["echo", "a#b"]]),
        ("echo \"a'b\" '\"'", [["echo", "a'b", '"']]),
        ('echo "\\$x \\a"', [["echo", "$x \\a"]]),
        ("echo $'a\\tb\\'c'", [["echo", "a\tb'c"]]),
        ('echo "$\'x\'" $ "$"', [["echo", "$'x'", "$", "$"]]),
        ('echo $x ${y} ${#z} $1 $? "$@"', [["echo", *[HOLE] * 6]]),
        ("echo a$(cat f)b", [["cat", "f"], ["echo", f"a{HOLE}b"]]),
        ("echo *.py ~ {a,b} [ab] {} a{}b", [["echo", HOLE, HOLE, HOLE, HOLE, "{}", HOLE]]),
        ("diff <(sort a) >(cat)", [["sort", "a"], ["cat"], ["diff", HOLE, HOLE]]),
        ("echo 2>(true)", [["true"], ["echo", f"2{HOLE}"]]),  # bash: `2/dev/fd/63`
        ("echo a 2\\\n>/dev/null", [["echo", "a"]]),
        ("cat <<'EOF'\n$(rm x) `rm y`\nEOF\n", [["cat"]]),
        ('cat <<"EOF"\n$(rm x)\nEOF', [["cat"]]),
        ("cat <<-EOF\n\thello\n\tEOF\necho after", [["cat"], ["echo", "after"]]),
        ("cat <<A <<'B'\na\nA\nb $(x)\nB\n", [["cat"]]),
        ("x \"$(cat <<'EOF'\nbody ) here\nEOF\n)\"", [["cat"], ["x", HOLE]]),
        ("! a | b |& c && d || e & f; g\nh", [[c] for c in "abcdefgh"]),
        ("time -p a; ! time b", [["a"], ["b"]]),
        ("( a ) >/dev/null; { b; } 2>&1", [["a"], ["b"]]),
        ("if a; then b; elif c; then d; else e; fi", [[c] for c in "abcde"]),
        ("while a; do b; done; until c\ndo d\ndone", [[c] for c in "abcd"]),
        ("echo fi then }", [["echo", "fi", "then", "}"]]),
        ("'if' x", [["if", "x"]]),  # quoted: a command named `if`
    ],
)
def test_what_is_modeled(line: str, commands: list[list[str]]) -> None:
    assert _commands(line) == commands


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("echo `x`", "backquote"),
        ("echo $((1))", "arithmetic"),
        ("echo $[1]", "arithmetic"),
        ("((x))", "arithmetic"),
        ("[[ -f x ]]", "`[[`"),
        ("echo ${x:-y}", "operator"),
        ("echo ${!x} ", "operator"),
        ("echo ${x@P}", "operator"),
        ("echo $_", "`$_`"),
        ("echo ${_}", "operator"),
        ('echo $"x"', "locale"),
        ("echo $'\\x41'", "escape"),
        ("x=1 git status", "variable"),
        ("a[0]=1", "variable"),
        ("f() { a; }", "function"),
        ("function f { a; }", "`function`"),
        ("for x in a; do b; done", "`for`"),
        ("case a in a) b;; esac", "`case`"),
        ("coproc a", "`coproc`"),
        ("echo {fd}>/dev/null", "{name}"),
        ('cat <<E"O"F\nEOF\nE"O"F\n', "partly quoted"),
        ("cat <<$'EOF'\nx\n$'EOF'\n", "partly quoted"),
        ("cat <<\\EOF\nx\nEOF\n", "partly quoted"),
        ("cat <<EOF\n$x\nEOF\n", "expanded by bash"),
        ("cat <<EOF\na\\\nEOF\n", "expanded by bash"),
        ("x \"$(cat <<'EOF'\nhi\nEOF)\n)\"", "starts like its end line"),
        ("cat <<'EOF'\nhi\n EOF\nEOF\n", "starts like its end line"),
        ("cat <<'EOF'\nno end\n", "has no `EOF` line"),
        ("echo $(cat <<EOF) x\nbody\nEOF\n", "no body inside it"),
        ("cat <<EOF 'a\nb'\nbody\nEOF\n", "line break inside quotes"),
        ("a | time b", "`time` is not modeled"),
        ("a | ! b", "`!` is not modeled"),
        ("time -x a", "option"),
        ("time -p -- rm x", "option"),  # bash reads `--` as the end of `time`'s options
        ("time -- rm x", "option"),
        ("echo 'open", "unterminated"),
        ('echo "open', "unterminated"),
        ("echo a\\", "backslash ends"),
        ("echo )", "`)`"),
        ("(a) b", "unexpected"),
        ("echo ${x", "unterminated"),
        ("echo $(" * 41 + "x" + ")" * 41, "nested more than 40"),
    ],
)
def test_what_is_unverifiable(line: str, reason: str) -> None:
    with pytest.raises(Unverifiable) as raised:
        recognize(line)
    assert reason in raised.value.reason


def test_two_file_redirections_are_read_not_looped_on() -> None:
    # A second redirection of a command used to be skipped without being consumed,
    # which looped forever (found by the mutation fuzz).
    line = parse_command_line("a >x 2>y <z >>w")
    assert [c.text for c in line.commands] == ["a"]
    assert not line.allowable and not line.hidden


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("echo é\\;rm x", "non-ASCII"),
        ("echo \x01", "quoting characters"),
        ("read x", "builtin"),
        ("printf -v x y", "printf"),
        ("[ -v x ]", "-v"),
        ("test $x = y", "expansion"),
        ("$CMD x", "command name"),
        ("sh -c 'echo a'", "other than the modeled bash"),
        ("bash -O extglob -c 'echo a'", "other than the modeled bash"),
        ("r\\\nm x", "disagree"),  # tree-sitter reads `r` and `m x`: one model is wrong
    ],
)
def test_what_hides_a_command(line: str, reason: str) -> None:
    parsed = parse_command_line(line)
    assert parsed.hidden and not parsed.allowable
    problems = [*parsed.problems, *(c.problem for c in parsed.commands)]
    assert any(reason in p for p in problems), problems


def test_bash_c_strings_are_read_with_the_same_model() -> None:
    parsed = parse_command_line("bash -ec 'git status && echo \"$(rm x)\"'")
    assert {c.words[0] for c in parsed.commands} == {"bash", "git", "echo", "rm"}
    assert not parsed.hidden and not parsed.allowable  # a command string is never allowed


@needs_bash
def test_the_builtin_list_is_the_real_bash_list() -> None:
    done = subprocess.run(
        ["bash", "-c", "compgen -b; echo ---; compgen -k"],
        capture_output=True,
        text=True,
        check=True,
    )
    builtins, keywords = done.stdout.split("---\n")
    assert set(builtins.split()) <= BUILTINS
    assert set(keywords.split()) == RESERVED
