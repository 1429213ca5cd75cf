"""Pins for the bash line reader (`permissions/bash.py`), decided end to end by a real
policy: how deep `bash -c` strings are followed, the length past which a line is not
read, the commands `find` runs, a program named by its path, and the words of the
question a user is asked about a line nobody can check.

Each was a mutant of `bash.py` no test noticed (issue 28, round 3).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from real_bash import bash

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy, parse_command_line
from assembler.permissions.bash import MAX_LENGTH, MAX_NESTING
from assembler.permissions.policy import Decision

needs_bash = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("bash") is None, reason="real bash"
)
DENY_RM = PermissionsSpec(default="allow", deny=("bash(rm *)",))


def decide(workspace: Path, command: str, spec: PermissionsSpec = DENY_RM) -> Decision:
    policy = PermissionPolicy.from_spec(spec, workspace=workspace)
    return policy.decide("bash", {"command": command}, None)


def nested(command: str, levels: int) -> str:
    for _ in range(levels):
        command = "bash -c " + shlex.quote(command)
    return command


def test_a_deny_rule_is_applied_inside_command_strings_up_to_the_nesting_limit(
    tmp_path: Path,
) -> None:
    assert MAX_NESTING == 4  # the documented limit; the lines below are built on it
    deepest = decide(tmp_path, nested("rm x", MAX_NESTING))
    assert (deepest.verdict, deepest.rule) == ("deny", "bash(rm *)")
    assert decide(tmp_path, nested("echo x", MAX_NESTING)).verdict == "allow"


def test_a_command_string_nested_past_the_limit_is_asked_about_not_allowed(
    tmp_path: Path,
) -> None:
    for inner in ("rm x", "echo x"):
        decision = decide(tmp_path, nested(inner, MAX_NESTING + 1))
        assert decision.verdict == "ask", inner
        assert "command strings nested too deeply" in decision.reason
        assert "cannot be checked against `bash(rm *)`" in decision.reason


def test_a_line_with_a_nul_character_is_asked_about_and_says_why(tmp_path: Path) -> None:
    decision = decide(tmp_path, "echo a\x00b")
    assert decision.verdict == "ask"
    assert "(the command contains a NUL character)" in decision.reason


def test_a_line_up_to_the_length_limit_is_read_and_a_longer_one_is_asked_about(
    tmp_path: Path,
) -> None:
    longest = "echo " + "a" * (MAX_LENGTH - len("echo "))
    assert len(longest) == 256 * 1024
    assert decide(tmp_path, longest).verdict == "allow"
    decision = decide(tmp_path, longest + "a")
    assert decision.verdict == "ask"
    assert "(not verifiable: longer than 256 KiB)" in decision.reason
    assert decide(tmp_path, longest[:-10] + "; rm x").verdict == "deny"


def test_a_long_line_that_is_not_cached_is_still_read(tmp_path: Path) -> None:
    command = "echo " + "a" * 20_000 + "; rm x"
    assert decide(tmp_path, command).verdict == "deny"
    assert decide(tmp_path, command[: -len("; rm x")]).verdict == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "find . -execdir rm {} +",
        "find . -ok rm {} \\;",
        "find . -okdir rm {} \\;",
        "find . -exec rm \\;",
        "find . -exec rm {}",  # no terminator: find refuses, the rule still denies
        # the command after the first `-exec ... ;` is a command too
        "find . -exec echo a {} \\; -exec rm {} \\;",
        "find . -exec echo a {} + -exec rm {} +",
        "/usr/bin/find . -name '*.o' -exec rm -f {} +",
    ],
)
def test_a_deny_rule_denies_what_find_runs(tmp_path: Path, command: str) -> None:
    decision = decide(tmp_path, command)
    assert (decision.verdict, decision.rule) == ("deny", "bash(rm *)"), command


@pytest.mark.parametrize("command", ["grep -exec rm x", "echo -execdir rm {} \\;"])
def test_exec_words_of_a_program_other_than_find_run_nothing(tmp_path: Path, command: str) -> None:
    assert decide(tmp_path, command).verdict == "allow"


def test_a_program_named_by_its_path_is_denied_with_its_arguments(tmp_path: Path) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(rm -rf *)",))
    for command in ("/bin/rm -rf /", "/usr/bin/rm -rf x", "./rm -rf x"):
        decision = decide(tmp_path, command, spec)
        assert (decision.verdict, decision.rule) == ("deny", "bash(rm -rf *)"), command
    assert decide(tmp_path, "/bin/rm -i x", spec).verdict == "allow"


ASK_ONLY = PermissionsSpec(default="ask", allow=("bash(git status)",))


def test_the_question_about_an_unverifiable_line_says_why(tmp_path: Path) -> None:
    decision = decide(tmp_path, "[[ -f a ]]", ASK_ONLY)
    assert decision.verdict == "ask"
    assert "(not verifiable: `[[` is not modeled)" in decision.reason


def test_the_question_about_two_readings_names_the_commands_they_disagree_on(
    tmp_path: Path,
) -> None:
    # a continuation inside the command name: bash reads `rm`, tree-sitter does not
    decision = decide(tmp_path, "r\\\nm x", ASK_ONLY)
    assert decision.verdict == "ask"
    found = re.search(
        r"not verifiable: two readings of the line disagree about the commands it runs "
        r"\((`[a-z]+`(?:, `[a-z]+`)*)\)",
        decision.reason,
    )
    assert found is not None, decision.reason
    assert "`rm`" in found.group(1).split(", ")


PROCESS_SUBSTITUTIONS = [
    "echo 2>(true)",  # `2>(` is a word `2` and a process substitution, not a redirection
    "echo 2>\\\n(true)",
    "echo 2\\\n>(true)",
    "cat <\\\n(true)",
]


@pytest.mark.parametrize("command", PROCESS_SUBSTITUTIONS)
def test_a_process_substitution_split_by_a_continuation_is_seen(
    tmp_path: Path, command: str
) -> None:
    deny_true = PermissionsSpec(default="allow", deny=("bash(true)",))
    assert decide(tmp_path, command, deny_true).verdict == "deny"
    allow = PermissionsSpec(default="ask", allow=("bash(echo *)", "bash(cat *)", "bash(true)"))
    assert decide(tmp_path, command, allow).verdict == "allow"


@needs_bash
@pytest.mark.parametrize("command", PROCESS_SUBSTITUTIONS)
def test_real_bash_runs_the_process_substitution_after_a_continuation(
    tmp_path: Path, command: str
) -> None:
    done = subprocess.run(
        ["bash", "-xc", command],
        check=False,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert re.search(r"^\++ true$", done.stderr, re.MULTILINE), done.stderr
    assert "/dev/fd/" in done.stderr


@pytest.mark.parametrize("command", ["echo $(", "(", "echo $\\\n(", "(\\\n"])
def test_a_line_ending_inside_a_construct_is_asked_about(tmp_path: Path, command: str) -> None:
    decision = decide(tmp_path, command, ASK_ONLY)
    assert decision.verdict == "ask"
    assert "not verifiable: the line ends inside a construct" in decision.reason


HALF_READ = "tou\\\nch marker; [[ -f a ]]"
"""Unverifiable at `[[`, after a command tree-sitter reads differently (`tou`, `ch`)."""


def test_a_command_read_before_the_line_turned_unverifiable_is_still_denied(
    tmp_path: Path,
) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(touch *)",))
    decision = decide(tmp_path, HALF_READ, spec)
    assert (decision.verdict, decision.rule) == ("deny", "bash(touch *)")


@needs_bash
def test_real_bash_runs_the_command_before_the_unverifiable_part(tmp_path: Path) -> None:
    subprocess.run(
        ["bash", "-c", HALF_READ], cwd=tmp_path, stdin=subprocess.DEVNULL, check=False, timeout=30
    )
    assert (tmp_path / "marker").exists()


def test_a_program_in_a_directory_known_only_when_it_runs_is_asked_about(
    tmp_path: Path,
) -> None:
    # a deny rule decides what it can see; `$DIR/rm` could be any program: the user is asked
    decision = decide(tmp_path, "$DIR/rm x")
    assert decision.verdict == "ask"
    assert "cannot be checked against `bash(rm *)`" in decision.reason


MODELED_RULES = PermissionsSpec(
    default="ask",
    allow=(
        "bash(printf *)", "bash(test *)", "bash([ *)", "bash(cd *)", "bash(pwd)",
        "bash(false)", "bash(type *)", "bash(echo *)", "bash(nice *)",
    ),
)  # fmt: skip


@pytest.mark.parametrize(
    "command",
    [
        "printf '%s\\n' hi",
        "printf -- x",
        "printf -- -v",  # after `--`, `-v` is the format, not the option
        "test -f x",
        "[ -f x ]",
        "cd src",
        "pwd",
        "false",
        "type git",
        "builtin echo hi",
    ],
)
def test_a_builtin_whose_arguments_are_data_is_allowed_by_its_rule(
    tmp_path: Path, command: str
) -> None:
    decision = decide(tmp_path, command, MODELED_RULES)
    assert decision.verdict == "allow", (command, decision.reason)


def test_exec_of_an_allowed_program_is_allowed_under_default_allow(tmp_path: Path) -> None:
    spec = PermissionsSpec(default="allow", deny=("bash(rm *)",))
    assert decide(tmp_path, "exec echo hi", spec).verdict == "allow"
    assert decide(tmp_path, "exec rm x", spec).verdict == "deny"


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("printf -v x y", "`printf` with an option"),
        ("printf $f", "`printf` with an option"),  # the format could be `-v`
        ("printf -x", "`printf` with an option"),
        ("test -v x", "`test` with `-v`, `-R` or an expansion"),
        ("[ -R x ]", "`[` with `-v`, `-R` or an expansion"),
        ("test $x = y", "`test` with `-v`, `-R` or an expansion"),
        ("test -e -v", "`test` with `-v`, `-R` or an expansion"),
        ("read x", "`read` is a shell builtin whose arguments are not modeled"),
        # `nice` runs the program `read`; where that is a script running the builtin
        # (`/usr/bin/read` on some systems), its subscript is evaluated as code
        ("nice read 'a[$(rm x)]'", "`read` is a shell builtin whose arguments are not modeled"),
        ("nice -n 1 read x", "`read` is a shell builtin whose arguments are not modeled"),
    ],
)
def test_a_builtin_that_can_evaluate_its_arguments_is_asked_about(
    tmp_path: Path, command: str, why: str
) -> None:
    for spec in (MODELED_RULES, DENY_RM):
        decision = decide(tmp_path, command, spec)
        assert decision.verdict == "ask", (command, decision.reason)
        assert why in decision.reason, decision.reason


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("export A=1; echo hi", "`export` is a shell builtin whose arguments are not modeled"),
        ("declare x=1", "`declare` is a shell builtin whose arguments are not modeled"),
        ("local a", "`local` is a shell builtin whose arguments are not modeled"),
        ("readonly a=1", "`readonly` is a shell builtin whose arguments are not modeled"),
    ],
)
def test_a_declaration_is_asked_about_for_what_it_is_not_as_a_disagreement(
    tmp_path: Path, command: str, why: str
) -> None:
    # tree-sitter reads these as declarations, not commands: the two readings agree
    decision = decide(tmp_path, command, ASK_ONLY)
    assert decision.reason == (
        f"no rule can allow this line ({why} (it can set variables or evaluate text as "
        "code)); the default is ask"
    )


def test_a_brace_expansion_as_a_name_is_asked_about_as_unknown(tmp_path: Path) -> None:
    decision = decide(tmp_path, "{git,status}", ASK_ONLY)
    assert decision.reason == (
        "no rule can allow this line (the command name is only known when it runs); "
        "the default is ask"
    )


@pytest.mark.parametrize(
    "command",
    [
        "git status >/dev/stdout",
        "git status 2>/dev/stderr",
        "git status </dev/stdin",
        "git status </dev/null",
        "(git status) 2>/dev/null",
        "{ git status; } >/dev/null 2>&1",
    ],
)
def test_a_redirection_to_a_standard_stream_is_allowed_with_the_command(
    tmp_path: Path, command: str
) -> None:
    decision = decide(tmp_path, command, ASK_ONLY)
    assert (decision.verdict, decision.rule) == ("allow", "bash(git status)"), decision.reason


@pytest.mark.parametrize("command", ["git status >/dev/stdin", "(git status) 2>notes.txt"])
def test_a_redirection_that_writes_a_file_is_asked_about(tmp_path: Path, command: str) -> None:
    decision = decide(tmp_path, command, ASK_ONLY)
    assert decision.verdict == "ask"
    assert "touches a file" in decision.reason


def test_a_word_after_a_compound_command_is_named_in_the_question(tmp_path: Path) -> None:
    decision = decide(tmp_path, "(git status) x", ASK_ONLY)
    assert decision.verdict == "ask"
    assert "not verifiable: unexpected `x` after a command" in decision.reason


def test_a_line_break_inside_a_substitution_with_a_pending_here_document_is_asked_about(
    tmp_path: Path,
) -> None:
    # where bash reads the here-document's body then is a known ambiguity
    decision = decide(tmp_path, "cat <<EOF $(echo a\necho b)\nbody\nEOF\n", ASK_ONLY)
    assert decision.verdict == "ask"
    assert "a line break inside `$(...)` while a here-document is pending" in decision.reason


def test_a_process_substitution_after_a_compound_command_is_asked_about(tmp_path: Path) -> None:
    decision = decide(tmp_path, "(echo a) 2>(true)", ASK_ONLY)
    assert "not verifiable: unexpected `2` after a command" in decision.reason


@needs_bash
def test_real_bash_refuses_a_process_substitution_after_a_compound_command(
    tmp_path: Path,
) -> None:
    done = bash("(echo a) 2>(true)", tmp_path)
    assert done.returncode == 2 and "syntax error" in done.stderr


def test_the_question_names_the_descriptor_a_compound_command_redirects(tmp_path: Path) -> None:
    decision = decide(tmp_path, "(git status) 2>notes.txt", ASK_ONLY)
    assert "the redirection `2> notes.txt` touches a file" in decision.reason


ANSI_C = "echo $'\\e\\E\\f\\r'"
"""`$'...'` escapes: what the word's value is, hence what an allow rule is matched with."""


def test_ansi_c_escapes_read_as_bash_reads_them(tmp_path: Path) -> None:
    (command,) = parse_command_line(ANSI_C).commands
    assert command.words == ("echo", "\x1b\x1b\x0c\r")


@needs_bash
def test_real_bash_reads_the_same_ansi_c_escapes(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", ANSI_C.replace("echo", "printf %s", 1)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.stdout == b"\x1b\x1b\x0c\r"


@pytest.mark.parametrize("quoted", ['"a\nb"', "$'a\nb'"])
def test_a_line_break_in_quotes_while_a_here_document_waits_is_asked_about(
    tmp_path: Path, quoted: str
) -> None:
    decision = decide(tmp_path, f"cat <<EOF {quoted}\nbody\nEOF\n", ASK_ONLY)
    assert decision.verdict == "ask"
    assert "a line break inside quotes while a here-document waits for its body" in (
        decision.reason
    )


WORDS = PermissionsSpec(
    default="allow", allow=("bash(rm *)", "bash(true)"), deny=("bash(rm -rf *)", "bash(diff * b)")
)
"""Rules whose answer depends on where a word ends and whether it is literal."""


def test_a_process_substitution_and_the_text_after_it_are_one_word(tmp_path: Path) -> None:
    commands = parse_command_line("diff <(true)b").commands
    (diff,) = [c for c in commands if c.words[0] == "diff"]
    assert len(diff.words) == 2  # `diff` and `/dev/fd/63b`, not `b` on its own
    joined = decide(tmp_path, "diff <(true)b", WORDS)
    assert joined.verdict == "ask"  # `bash(diff * b)` may match once the path is known
    assert "may match once the line's expansions are known" in joined.reason
    assert decide(tmp_path, "diff <(true) b", WORDS).verdict == "deny"


def test_an_unmatched_brace_is_a_literal_word_a_deny_rule_cannot_reach(tmp_path: Path) -> None:
    decision = decide(tmp_path, "rm notes{old", WORDS)
    assert (decision.verdict, decision.rule) == ("allow", "bash(rm *)")
    assert decide(tmp_path, "rm notes{old,new}", WORDS).verdict == "ask"  # brace expansion


@needs_bash
def test_real_bash_reads_those_words_the_same_way(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", "printf '[%s]' <(true)b notes{old"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.stdout.startswith(b"[/dev/fd/") and done.stdout.endswith(b"b][notes{old]")
    assert done.stdout.count(b"[") == 2


def test_a_here_document_delimiter_written_with_backslashes_is_asked_about(
    tmp_path: Path,
) -> None:
    # Only `WORD`, `'WORD'` and `"WORD"` are modeled; `\E\O\F` is refused, not guessed.
    decision = decide(tmp_path, "cat <<\\E\\O\\F\nbody\nEOF\n", WORDS)
    assert decision.verdict == "ask"
    assert "the here-document delimiter `\\E\\O\\F` is partly quoted or not a plain word" in (
        decision.reason
    )


def test_a_backquote_inside_double_quotes_is_named_in_the_question(tmp_path: Path) -> None:
    decision = decide(tmp_path, 'echo "today: `date`"', ASK_ONLY)
    assert decision.verdict == "ask"
    assert "a backquote command substitution (its escaping rules nest)" in decision.reason


ANSI_C_REST = "echo $'\\\\\\'\\\"\\?\\a\\b\\n\\t\\v'"
"""The other `$'...'` escapes the recognizer models."""


def test_the_other_ansi_c_escapes_read_as_bash_reads_them(tmp_path: Path) -> None:
    (command,) = parse_command_line(ANSI_C_REST).commands
    assert command.words == ("echo", "\\'\"?\a\b\n\t\v")


@needs_bash
def test_real_bash_reads_the_other_ansi_c_escapes_the_same_way(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", ANSI_C_REST.replace("echo", "printf %s", 1)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.stdout == b"\\'\"?\a\b\n\t\v"


def test_an_unterminated_ansi_c_string_is_asked_about(tmp_path: Path) -> None:
    decision = decide(tmp_path, "echo $'notes", ASK_ONLY)
    assert decision.verdict == "ask"
    assert "an unterminated `$'`" in decision.reason


def test_an_ansi_c_word_on_a_here_document_line_is_read(tmp_path: Path) -> None:
    spec = PermissionsSpec(default="ask", allow=("bash(cat *)",))
    decision = decide(tmp_path, "cat <<EOF $'notes.txt'\nbody\nEOF\n", spec)
    assert (decision.verdict, decision.rule) == ("allow", "bash(cat *)")


def test_the_length_of_the_previous_commands_last_argument_is_asked_about(
    tmp_path: Path,
) -> None:
    decision = decide(tmp_path, "echo ${#_}", ASK_ONLY)
    assert decision.verdict == "ask"
    assert "`${#_}`: an expansion with an operator" in decision.reason


LITERAL_BRACKETS = ("notes}", "a}{b", "a][b", "x]y[z")
"""Words with a brace or bracket that bash leaves as they are (no pattern, no list)."""


def test_stray_braces_and_brackets_are_literal_words(tmp_path: Path) -> None:
    for word in LITERAL_BRACKETS:
        decision = decide(tmp_path, f"rm {word}", WORDS)
        assert (decision.verdict, decision.rule) == ("allow", "bash(rm *)"), word


@needs_bash
def test_real_bash_leaves_those_words_as_they_are(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", "printf '[%s]' " + " ".join(LITERAL_BRACKETS)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.stdout == b"".join(b"[%s]" % w.encode() for w in LITERAL_BRACKETS)


def test_a_variable_whose_name_holds_digits_may_reach_a_deny_rule(tmp_path: Path) -> None:
    # `$name1` is one variable (bash: `name1=a.txt; rm $name1` removes a.txt), not `$name`
    # followed by `1`: the deny rule may match once it is known.
    spec = PermissionsSpec(default="allow", allow=("bash(rm *)",), deny=("bash(rm *.txt)",))
    decision = decide(tmp_path, "rm $name1", spec)
    assert decision.verdict == "ask"
    assert "`bash(rm *.txt)` may match once the line's expansions are known" in decision.reason


def test_an_empty_quoted_word_is_a_word(tmp_path: Path) -> None:
    (command,) = parse_command_line('echo "" notes').commands
    assert command.words == ("echo", "", "notes")
    decision = decide(tmp_path, 'echo "" notes', PermissionsSpec(allow=("bash(echo *)",)))
    assert (decision.verdict, decision.rule) == ("allow", "bash(echo *)")
    # an empty command name (bash: "command not found") is still decided, by the default
    assert decide(tmp_path, '"" notes', ASK_ONLY).verdict == "ask"


@needs_bash
def test_real_bash_reads_the_digits_and_the_empty_word_the_same_way(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", "name=x; name1=a.txt; printf '[%s]' $name1 \"\" notes"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.stdout == b"[a.txt][][notes]"
