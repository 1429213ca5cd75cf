"""Properties of the bash splitter, over generated command lines (hypothesis).

- Allowed commands joined by any separators stay allowed.
- Inserting one command that no rule allows, anywhere and in any construct (after a
  separator, in `$(...)`, backquotes, a subshell, a pipe, process substitution), makes
  the line not allowed; with a deny rule on it, the line is denied.
- Simple commands survive any quoting style: each allowed word can be quoted in any
  way bash accepts.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy

ALLOWED = ["git status", "git diff HEAD", "ls -la", "python3 -m unittest discover -s tests"]
RULES = ("bash(git status)", "bash(git diff *)", "bash(ls *)", "bash(python3 -m unittest *)")
SEPARATORS = ["; ", " && ", " || ", " | ", "\n", " & ", " |& "]
DISALLOWED = ["rm -rf x", "curl http://127.0.0.1 -o x", "touch tests/x", "chmod +x x"]
INSERTIONS = [
    "{sep}{bad}",
    "{sep}$({bad})",
    "{sep}echo `{bad}`",
    "{sep}({bad})",
    "{sep}{{ {bad}; }}",
    " | {bad}",
    "{sep}cat <({bad})",
    "{sep}git status $({bad})",
    "{sep}FOO=1 {bad}",
    "{sep}env {bad}",
    "{sep}timeout 5 {bad}",
]
WORKSPACE = Path(__file__).parent


def _policy(deny: tuple[str, ...] = ()) -> PermissionPolicy:
    spec = PermissionsSpec(default="ask", allow=RULES, deny=deny)
    return PermissionPolicy.from_spec(spec, workspace=WORKSPACE)


def _quote(word: str, style: int) -> str:
    if style == 1:
        return f"'{word}'"
    if style == 2:
        return f'"{word}"'
    if style == 3 and len(word) > 1:
        return f"{word[0]}'{word[1:]}'"
    return word


commands = st.lists(st.sampled_from(ALLOWED), min_size=1, max_size=6)
separators = st.sampled_from(SEPARATORS)


@settings(max_examples=200, deadline=None)
@given(commands, st.lists(separators, min_size=6, max_size=6))
def test_allowed_commands_joined_stay_allowed(parts: list[str], seps: list[str]) -> None:
    line = parts[0] + "".join(sep + part for sep, part in zip(seps, parts[1:], strict=False))
    decision = _policy().decide("bash", {"command": line}, None)
    assert decision.verdict == "allow", (line, decision)


@settings(max_examples=300, deadline=None)
@given(
    parts=commands,
    seps=st.lists(separators, min_size=6, max_size=6),
    bad=st.sampled_from(DISALLOWED),
    form=st.sampled_from(INSERTIONS),
    at=st.integers(min_value=0, max_value=6),
    sep=separators.filter(lambda s: s not in (" | ", " |& ")),
)
def test_inserting_a_disallowed_command_anywhere_refuses_the_line(
    *, parts: list[str], seps: list[str], bad: str, form: str, at: int, sep: str
) -> None:
    at = min(at, len(parts))
    pieces = [parts[0], *(s + p for s, p in zip(seps, parts[1:], strict=False))]
    pieces.insert(at, form.format(sep=sep, bad=bad))
    line = "".join(pieces)
    if at == 0:
        line = line.removeprefix(sep)
    assert _policy().decide("bash", {"command": line}, None).verdict == "ask", line
    deny = f"bash({bad.split(maxsplit=1)[0]} *)"
    decision = _policy(deny=(deny,)).decide("bash", {"command": line}, None)
    assert (decision.verdict, decision.rule) == ("deny", deny), line


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ALLOWED), st.lists(st.integers(0, 3), min_size=8, max_size=8))
def test_quoting_does_not_change_the_command(command: str, styles: list[int]) -> None:
    words = command.split()
    quoted = " ".join(_quote(w, s) for w, s in zip(words, styles, strict=False))
    assert _policy().decide("bash", {"command": quoted}, None).verdict == "allow", quoted
