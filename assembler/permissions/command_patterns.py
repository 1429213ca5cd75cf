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

A part of a command that is only known when it runs (`$x`, `$(cmd)`, a glob) is
written as `HOLE` in the text; a pattern's own characters never match it (a rule
cannot contain NUL), only a `*` can. `could_match` answers the deny side's question,
"could some value of the holes match?".

Matching is a glob match without regular expressions: the pieces between stars are
found left to right with `str.find`, so a decision costs the length of the command
whatever the stars, and many rules cost their number (see `matching.CommandIndex`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assembler.errors import PermissionRuleError

_STAR = object()
#: The unknown part of a command's value (`assembler.permissions.bash_words.HOLE`).
HOLE = "\x00"
#: Words of holes alone a command may have before `could_match` stops trying each
#: present and absent (2 ** 8 tries) and answers yes.
MAX_VANISHING = 8


@dataclass(frozen=True)
class CommandPattern:
    """`pieces` are the literal texts around the pattern's stars; `tail` says the pattern
    ended with ` *` (then the text before it also matches alone); `key` is its first
    word when that is literal (the index in `matching` looks rules up by it)."""

    text: str
    pieces: tuple[str, ...]
    tail: bool
    key: str | None

    def matches(self, command: str) -> bool:
        """Whether every value of `command` matches (a hole only under a star)."""
        if _glob(self.pieces, command):
            return True
        return self.tail and _glob((*self.pieces[:-1], self.pieces[-1] + " ", ""), command)

    def could_match(self, command: str) -> bool:
        """Whether some value of `command`'s holes makes it match. A word that is only
        holes may also vanish (an unquoted `$x` that is empty is no word at all: `git
        status $x` runs `git status`), so each such word is tried present and absent;
        past `MAX_VANISHING` of them the answer is yes (this is the deny side's question,
        where a wrong no lets a denied command run)."""
        if HOLE not in command:
            return self.matches(command)
        words = command.split(" ")
        vanishing = [i for i, word in enumerate(words) if word and not word.strip(HOLE)]
        if len(vanishing) > MAX_VANISHING:
            return True
        for absent in range(1 << len(vanishing)):
            gone = {index for bit, index in enumerate(vanishing) if absent >> bit & 1}
            if self._could_match_words(
                " ".join(word for i, word in enumerate(words) if i not in gone)
            ):
                return True
        return False

    def _could_match_words(self, command: str) -> bool:
        if _could_glob(self.pieces, command):
            return True
        return self.tail and _could_glob((*self.pieces[:-1], self.pieces[-1] + " ", ""), command)


def compile_command_pattern(text: str) -> CommandPattern:
    """Compile `text`; a dangling quote or backslash raises `PermissionRuleError`
    with the offset into `text`."""
    if HOLE in text:
        raise PermissionRuleError(
            "a NUL character cannot be part of a command", text, text.find(HOLE)
        )
    source = text
    if source.endswith(":*") and not source.endswith("\\:*"):
        source = source[:-2].rstrip() + " *"
    words = _words(source, text)
    if not words:
        raise PermissionRuleError("empty command pattern", text)
    tail = len(words) > 1 and words[-1] == [_STAR]
    if tail:
        words = words[:-1]
    pieces: list[str] = [""]
    for index, word in enumerate(words):
        if index:
            pieces[-1] += " "
        for piece in word:
            if piece is _STAR:
                pieces.append("")
            else:
                pieces[-1] += str(piece)
    first = pieces[0]
    key = first.split(" ", 1)[0] if (" " in first or len(pieces) == 1) else None
    return CommandPattern(text, tuple(pieces), tail, key)


def quote_word(word: str) -> str:
    """Write `word` so that a pattern reads it back literally (for session rules)."""
    if word and all(c.isascii() and (c.isalnum() or c in "_@%+=:,./-") for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _glob(pieces: tuple[str, ...], text: str) -> bool:
    """`text` against `piece0 * piece1 * ... pieceN`: the outer pieces anchored, the
    inner ones found leftmost in turn (which is optimal when `*` is the only wildcard)."""
    if len(pieces) == 1:
        return text == pieces[0]
    first, last = pieces[0], pieces[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first):
        return False
    if not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for piece in pieces[1:-1]:
        found = text.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def _could_glob(pieces: tuple[str, ...], text: str) -> bool:
    """Whether the pattern and `text` (with holes matching any string) have a common
    string: a set of pattern positions (a bit mask) advanced over `text`; a hole
    reaches every position from the earliest one held."""
    segments = text.split(HOLE)
    head, rest = segments[0], segments[-1]
    first, last = pieces[0], pieces[-1] if len(pieces) > 1 else ""
    if not (first.startswith(head) or head.startswith(first)) and len(pieces) > 1:
        return False
    if len(pieces) > 1 and not (last.endswith(rest) or rest.endswith(last)):
        return False
    tokens: list[str | None] = []
    for index, piece in enumerate(pieces):
        if index:
            tokens.append(None)
        tokens.extend(piece)
    stars = 0
    masks: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token is None:
            stars |= 1 << index
        else:
            masks[token] = masks.get(token, 0) | 1 << index
    everything = (1 << (len(tokens) + 1)) - 1

    def closure(states: int) -> int:
        while True:
            grown = states | (states & stars) << 1
            if grown == states:
                return states
            states = grown

    states = closure(1)
    for char in text:
        if char == HOLE:
            lowest = (states & -states).bit_length() - 1
            states = everything & ~((1 << lowest) - 1) if states else 0
        else:
            states = closure((states & masks.get(char, 0)) << 1 | (states & stars))
        if not states:
            return False
    return bool(states >> len(tokens) & 1)


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
