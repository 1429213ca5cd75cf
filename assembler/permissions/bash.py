"""Split a bash command line into the simple commands it runs, as bash reads it.

The tool runs a line as `bash -c LINE` (non-interactive: no aliases, no history
expansion, `extglob` off). A rule may allow a line only when every construct in it is
one the checker models exactly as that bash does (`assembler.permissions.bash_grammar`,
a small hand-written recognizer following bash's own lexical rules); everything else
is *unverifiable*: never allowed by a rule, and never matched against a deny rule as
if it were safe (the policy asks, or refuses where nobody can answer). tree-sitter's
reading (`bash_treesitter`) finds commands for deny rules in an unverifiable line and
is compared with the recognizer's: when they disagree, the line is unverifiable.

For each simple command the checker keeps the texts allow and deny rules are matched
against (wrappers seen through, `bash -c` strings and `find -exec` commands parsed
too), and why no allow rule can cover it (`problem`). A line is *hidden* when part of
what would run cannot be seen (unverifiable, `eval "$x"`, a computed command name, a
builtin that evaluates its arguments): then no deny rule can be ruled out either.

Parses are cached by command text: an agent repeats its commands, and a decision
then costs only the pattern matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from assembler.permissions.bash_builtins import BUILTINS, MODELED, builtin_problem
from assembler.permissions.bash_grammar import RawCommand, recognize
from assembler.permissions.bash_reader import Unverifiable
from assembler.permissions.bash_treesitter import treesitter_reading
from assembler.permissions.bash_words import HOLE, ShellWord
from assembler.permissions.wrappers import Word, unwrap

#: How deep `bash -c 'bash -c ...'` strings are followed before giving up (hidden).
MAX_NESTING = 4
#: Longer lines are not read at all (unverifiable): reading costs time in proportion.
MAX_LENGTH = 256 * 1024
_CACHED_LENGTH = 16 * 1024
UNVERIFIABLE = "not verifiable"
_LOCALE_BACKSLASH = re.compile(r"[^\x00-\x7f]\\")
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9_./+-]+")
_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: `text` as written (word values joined by one space, a
    non-literal word shown as written), the texts allow and deny rules are matched
    against (`HOLE` for what is known only when it runs), and `problem`, why no allow
    rule can cover it (empty when one can)."""

    text: str
    allow_views: tuple[str, ...]
    deny_views: tuple[str, ...]
    problem: str = ""
    words: tuple[str, ...] = ()

    @property
    def literal(self) -> bool:
        """Whether every word's value is known now (no `$x`, `$(...)`, glob)."""
        return not any(HOLE in word for word in self.words)


@dataclass(frozen=True)
class CommandLine:
    """A parsed command line: its simple commands, why it cannot be allowed by rules
    (`problems`, empty when it can), and whether part of it could not be seen
    (`hidden`: then no deny rule can be ruled out)."""

    source: str
    commands: tuple[SimpleCommand, ...]
    problems: tuple[str, ...] = ()
    hidden: bool = False

    @property
    def allowable(self) -> bool:
        return not self.problems and all(not c.problem for c in self.commands)


def parse_command_line(command: str) -> CommandLine:
    """The simple commands of `command` (cached up to `_CACHED_LENGTH` characters: a
    cache of long lines would hold a lot of memory for lines rarely repeated)."""
    if len(command) > _CACHED_LENGTH:
        return _parse(command)
    return _parse_cached(command)


def parse_cache_clear() -> None:
    _parse_cached.cache_clear()


@lru_cache(maxsize=4096)
def _parse_cached(command: str) -> CommandLine:
    return _parse(command)


def _parse(command: str) -> CommandLine:
    reading = _Reading()
    reading.line(command, 0, modeled=True)
    problems = tuple(dict.fromkeys(reading.problems))
    return CommandLine(command, tuple(reading.commands), problems, reading.hidden)


@dataclass
class _Reading:
    commands: list[SimpleCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    hidden: bool = False

    def problem(self, reason: str, hidden: bool) -> None:
        self.problems.append(reason)
        self.hidden = self.hidden or hidden

    def line(self, text: str, depth: int, *, modeled: bool) -> None:
        """Read one line (or a `bash -c` string, `depth` levels down); `modeled` says
        whether the shell that reads it is the bash the checker models."""
        if depth > MAX_NESTING:
            self.problem("command strings nested too deeply", True)
            return
        if "\x00" in text:
            self.problem("the command contains a NUL character", True)
            return
        if len(text) > MAX_LENGTH:
            self.problem(f"{UNVERIFIABLE}: longer than {MAX_LENGTH // 1024} KiB", True)
            return
        reason = _precheck(text)
        raw: list[RawCommand] = []
        if not reason:
            try:
                recognized = recognize(text)
            except Unverifiable as exc:
                reason = exc.reason
                raw = [c for c in exc.partial if isinstance(c, RawCommand)]
            except RecursionError:  # bounded by MAX_DEPTH; a safety net for deep callers
                reason = "nested too deeply"
            else:
                raw = recognized.commands
                self.problems.extend(recognized.problems)
        theirs, complete = treesitter_reading(text)
        if not reason and not complete:
            reason = "the second reading (tree-sitter) did not finish in time"
        if not reason:
            reason = _disagreement(raw, theirs)
        if reason:
            # Either reading's commands can still be denied: denying is always safe.
            self.problem(f"{UNVERIFIABLE}: {reason}", True)
            for words in [*theirs, *([_word(w) for w in c.words] for c in raw)]:
                self.add(words, UNVERIFIABLE, depth)
            return
        if not modeled:
            self.problem("a shell other than the modeled bash reads this command string", True)
        for command in raw:
            self.add([_word(w) for w in command.words], command.problem, depth)

    def add(self, words: list[Word], problem: str, depth: int) -> None:
        """One simple command, and the commands `find -exec` in it runs."""
        queue = [words]
        while queue:
            current = queue.pop()
            if not current:
                continue
            if not current[0].literal:
                self.problem("the command name is only known when it runs", True)
            found = unwrap(current)
            self.hidden = self.hidden or found.hidden
            builtin = builtin_problem(found.deny_views)
            if builtin:
                self.problem(builtin, True)
            for code, modeled in found.code:
                self.line(code, depth + 1, modeled=modeled)
            full = _render(current)
            allow = [full] + [_render(v) for v in found.allow_views[1:]]
            deny = [full] + [_render(v) for v in found.deny_views]
            last = found.deny_views[-1]
            if last and last[0].literal and "/" in last[0].value:
                deny.append(_render((Word(last[0].value.rsplit("/", 1)[-1]), *last[1:])))
            self.commands.append(
                SimpleCommand(
                    " ".join(w.display for w in current),
                    tuple(dict.fromkeys(allow)),
                    tuple(dict.fromkeys(deny)),
                    problem or found.problem or builtin,
                    tuple(w.value for w in current),
                )
            )
            if current[0].literal and current[0].value.rsplit("/", 1)[-1] == "find":
                queue.extend(_find_exec(current))


def _precheck(text: str) -> str:
    """Why bash could read `text` differently whatever its grammar ("" when not)."""
    if "\x01" in text or "\x7f" in text:
        return "bash's own quoting characters (\\x01, \\x7f) are in the command"
    if _LOCALE_BACKSLASH.search(text):
        return (
            "a non-ASCII character right before a backslash (in some locales the "
            "backslash is part of that character)"
        )
    return ""


def _disagreement(raw: list[RawCommand], theirs: list[list[Word]]) -> str:
    """Why the recognizer's reading and tree-sitter's differ ("" when they agree on
    which programs run, wrappers such as `time` or `env` seen through)."""
    mine = _names([[_word(w) for w in c.words] for c in raw])
    other = _names(theirs)
    if mine == other:
        return ""
    shown = ", ".join(f"`{n}`" for n in sorted(mine ^ other))
    return f"two readings of the line disagree about the commands it runs ({shown})"


def _names(commands: list[list[Word]]) -> set[str]:
    """The programs the commands run; builtins that hide a line anyway (`export`,
    which tree-sitter reads as a declaration, not a command) are left out."""
    names = set()
    for words in commands:
        if words:
            innermost = unwrap(words).deny_views[-1]
            name = innermost[0].value if innermost and innermost[0].literal else ""
            if _SIMPLE_NAME.fullmatch(name) and (name not in BUILTINS or name in MODELED):
                names.add(name)
    return names


def _word(word: ShellWord) -> Word:
    return Word(word.value, word.literal, "" if word.literal else word.source)


def _render(words: tuple[Word, ...] | list[Word]) -> str:
    return " ".join(w.value for w in words)


def _find_exec(words: list[Word]) -> list[list[Word]]:
    """`find ... -exec CMD {} ;` runs CMD: more commands to check."""
    found: list[list[Word]] = []
    i = 0
    while i < len(words):
        if words[i].value in _EXEC:
            end = i + 1
            while end < len(words) and words[end].value not in (";", "+"):
                end += 1
            if end > i + 1:
                found.append(list(words[i + 1 : end]))
            i = end
        i += 1
    return found
