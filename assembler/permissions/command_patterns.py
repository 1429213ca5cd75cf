"""Command patterns for `bash`: `git status`, `git diff *`, `git log:*`.

A pattern is written like a command: words separated by spaces, with shell quoting
(`'...'`, `"..."`, `\\x`) for words holding spaces or a literal `*`. An unquoted `*`
matches any characters, spaces included. It is matched against one simple command
at a time (`assembler.permissions.bash`), written in a canonical form: its words'
values (quotes removed, as bash passes them to the program) joined by one space.
So `git "status"` and `git status` are the same command, and `git status ';' rm` is
one `git` command with two more arguments.

- `git status` matches exactly that command, nothing more;
- `git diff *` matches `git diff` followed by any arguments, or none: a space then
  `*` at the end matches "and any further words", so `ls *` matches `ls -la` but
  not `lsof`;
- `git log:*` (Claude Code's spelling) is the same as `git log *`;
- `*` elsewhere matches anything, `git * main` included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assembler.errors import PermissionRuleError

_STAR = object()


@dataclass(frozen=True)
class CommandPattern:
    text: str
    regex: re.Pattern[str]
    literal: str | None  # the command it matches when it has no wildcard

    def matches(self, command: str) -> bool:
        return self.regex.fullmatch(command) is not None


def compile_command_pattern(text: str) -> CommandPattern:
    """Compile `text`; a dangling quote or backslash raises `PermissionRuleError`
    with the offset into `text`."""
    source = text
    if source.endswith(":*") and not source.endswith("\\:*"):
        source = source[:-2].rstrip() + " *"
    words = _words(source, text)
    if not words:
        raise PermissionRuleError("empty command pattern", text)
    parts: list[str] = []
    literal = True
    for index, word in enumerate(words):
        if index == len(words) - 1 and index > 0 and word == [_STAR]:
            parts.append("(?: .*)?")
            literal = False
            continue
        if index:
            parts.append(" ")
        for piece in word:
            if piece is _STAR:
                parts.append(".*")
                literal = False
            else:
                parts.append(re.escape(str(piece)))
    joined = " ".join("".join(str(p) for p in w if p is not _STAR) for w in words)
    return CommandPattern(text, re.compile("".join(parts), re.DOTALL), joined if literal else None)


def quote_word(word: str) -> str:
    """Write `word` so that a pattern reads it back literally (for session rules)."""
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _words(source: str, original: str) -> list[list[object]]:
    """Split like a shell: whitespace separates words; quotes and backslashes make
    characters literal; an unquoted `*` becomes a wildcard piece."""
    words: list[list[object]] = []
    current: list[object] = []
    started = False
    i = 0
    while i < len(source):
        char = source[i]
        if char in " \t\n":
            if started:
                words.append(current)
            current, started = [], False
        elif char == "*":
            current.append(_STAR)
            started = True
        elif char == "\\":
            if i + 1 >= len(source):
                raise PermissionRuleError("a backslash at the end escapes nothing", original, i)
            current.append(source[i + 1])
            started = True
            i += 1
        elif char in "'\"":
            end = source.find(char, i + 1)
            while char == '"' and end > 0 and source[end - 1] == "\\":
                end = source.find(char, end + 1)
            if end < 0:
                raise PermissionRuleError(f"unclosed {char} quote", original, _offset(original, i))
            body = source[i + 1 : end]
            if char == '"':
                body = re.sub(r'\\([\\"$`])', r"\1", body)
            current.append(body)
            started = True
            i = end
        else:
            current.append(char)
            started = True
        i += 1
    if started:
        words.append(current)
    return words


def _offset(original: str, index: int) -> int:
    """Where `index` of the rewritten pattern is in what the user wrote (inside the
    rule the pattern starts after `bash(`; callers add that)."""
    return min(index, len(original))
