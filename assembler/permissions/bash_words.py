"""One word of a bash command line, read by bash's lexical rules.

What a word can hold, and what the recognizer knows about its value:

- unquoted characters, `\\x`, `'...'`, `"..."` (where only `\\$`, `\\``, `\\"`, `\\\\`
  and `\\<newline>` are escapes, and `'` is an ordinary character), and `$'...'` with
  the simple escapes (`\\n`, `\\t`, `\\\\`, `\\'`, ...): their value is known;
- `$name`, `${name}`, `${#name}`, `$1`, `$?` and the other special parameters, and
  `$(...)`, `<(...)`, `>(...)` (parsed with the same grammar, through `Nesting`): their
  value is a *hole*, known only when the line runs;
- an unquoted `*`, `?`, `[...]`, `~` or `{...}` (pathname, tilde and brace expansion)
  makes the whole word a hole: it may become any number of other words.

Anything else a word can hold is `Unverifiable`: backquotes (nested escaping rules),
`$((...))` and `$[...]` (arithmetic evaluates names and subscripts as code), `${...}`
with an operator (its nested words, quotes and substitutions follow rules of their
own), `$_`, `${!x}`, `${x@P}`, `$"..."`, and `$'...'` with other escapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from assembler.permissions.bash_reader import METACHARACTERS, Reader, Unverifiable

#: Stands for the unknown part of a value (patterns never contain it: a rule's literal
#: text cannot match a hole, only `*` can).
HOLE = "\x00"

_RUN = re.compile(r"[A-Za-z0-9_./,:=+%@^!#-]+")
_DOUBLE_RUN = re.compile(r"[^\"\\$`\n]+")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_SPECIAL = frozenset("@*#?$!-")
_BRACED = re.compile(r"#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)|[@*#?$!-]")
_ANSI_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


class Nesting(Protocol):
    """What reading a word needs from the parser: the reader, a way to parse a
    substitution's commands, and whether a here-document is waiting for its body
    (then a newline inside a word would be read differently)."""

    @property
    def reader(self) -> Reader: ...

    def substitution(self) -> None:
        """Parse commands up to the matching `)` and consume it."""

    def pending_heredocs(self) -> bool: ...


@dataclass(frozen=True)
class ShellWord:
    """A word: `value` as the program receives it (with `HOLE` for unknown parts),
    `shape` the kinds of its parts in order (`u` unquoted, `s` single-quoted, `d`
    double-quoted, `e` escaped, `a` ANSI-C quoted, `x` expansion) with their text,
    and `source` as written."""

    value: str
    shape: tuple[tuple[str, str], ...]
    source: str

    @property
    def literal(self) -> bool:
        return HOLE not in self.value

    @property
    def plain(self) -> bool:
        """Only unquoted characters, no expansion: reserved words, fd numbers."""
        return len(self.shape) == 1 and self.shape[0][0] == "u" and self.literal


class _Builder:
    def __init__(self) -> None:
        self.value: list[str] = []
        self.shape: list[tuple[str, str]] = []
        self.unquoted: list[str] = []
        self.wholly_unknown = False

    def add(self, kind: str, text: str) -> None:
        if kind == "x":
            self.value.append(HOLE)
        else:
            self.value.append(text)
        if kind == "u":
            self.unquoted.append(text)
        if self.shape and self.shape[-1][0] == kind and kind != "x":
            self.shape[-1] = (kind, self.shape[-1][1] + text)
        else:
            self.shape.append((kind, text))


def read_word(parser: Nesting) -> ShellWord:
    """Read the word starting at the reader's position (not a metacharacter, not a
    comment's `#`) up to the next unquoted metacharacter."""
    reader = parser.reader
    start = reader.pos
    word = _Builder()
    while True:
        run = _RUN.match(reader.text, reader.pos)
        if run is not None:
            word.add("u", run.group())
            reader.pos = run.end()
        char = reader.peek()
        if char == "":
            break
        if char in METACHARACTERS:
            if char in "<>" and reader.peek_many(2)[1:] == "(":
                reader.take_many(2)
                parser.substitution()
                word.add("x", char + "(...)")
                continue
            break
        reader.take()
        if char == "\\":
            escaped = reader.take_raw()
            if escaped == "":
                raise Unverifiable("a backslash ends the command")
            word.add("e", escaped)
        elif char == "'":
            _single(parser, word)
        elif char == '"':
            _double(parser, word)
        elif char == "$":
            _dollar(parser, word, quoted=False)
        elif char == "`":
            raise Unverifiable("a backquote command substitution (its escaping rules nest)")
        else:
            word.add("u", char)
    return _finish(word, reader.text[start : reader.pos])


def _finish(word: _Builder, source: str) -> ShellWord:
    value = "".join(word.value)
    unquoted = "".join(word.unquoted)
    glob = "*" in unquoted or "?" in unquoted
    bracket = unquoted.find("[")
    if bracket >= 0 and "]" in source[source.find("[") + 1 :]:
        glob = True
    brace = unquoted.find("{")
    if brace >= 0 and "}" in unquoted[brace + 1 :] and value != "{}":
        glob = True
    if glob or "~" in unquoted:
        value = HOLE  # expands to file names, a home directory, or several words
    return ShellWord(value, tuple(word.shape), source)


def _single(parser: Nesting, word: _Builder) -> None:
    reader = parser.reader
    close = reader.text.find("'", reader.pos)
    if close < 0:
        raise Unverifiable("an unterminated single quote")
    text = reader.text[reader.pos : close]
    reader.pos = close + 1
    if "\n" in text and parser.pending_heredocs():
        raise Unverifiable("a line break inside quotes while a here-document waits for its body")
    word.add("s", text)


def _double(parser: Nesting, word: _Builder) -> None:
    reader = parser.reader
    while True:
        run = _DOUBLE_RUN.match(reader.text, reader.pos)
        if run is not None:
            word.add("d", run.group())
            reader.pos = run.end()
        char = reader.take()
        if char == "":
            raise Unverifiable("an unterminated double quote")
        if char == '"':
            word.add("d", "")
            return
        if char == "\\":
            escaped = reader.take_raw()
            if escaped == "":
                raise Unverifiable("an unterminated double quote")
            word.add("d", escaped if escaped in '$`"\\' else "\\" + escaped)
        elif char == "$":
            _dollar(parser, word, quoted=True)
        elif char == "`":
            raise Unverifiable("a backquote command substitution (its escaping rules nest)")
        else:
            if char == "\n" and parser.pending_heredocs():
                raise Unverifiable(
                    "a line break inside quotes while a here-document waits for its body"
                )
            word.add("d", char)


def _dollar(parser: Nesting, word: _Builder, *, quoted: bool) -> None:
    """After a `$`: an expansion, or a literal `$`."""
    reader = parser.reader
    char = reader.peek()
    if char == "(":
        reader.take()
        if reader.peek() == "(" or reader.peek_raw() == "(":
            raise Unverifiable("`$((...))` arithmetic evaluates names and subscripts as code")
        parser.substitution()
        word.add("x", "$(...)")
    elif char == "{":
        reader.take()
        inside: list[str] = []
        while (next_char := reader.take()) != "}":
            if next_char == "" or len(inside) > 256:
                raise Unverifiable("an unterminated `${`")
            inside.append(next_char)
        name = "".join(inside)
        if _BRACED.fullmatch(name) is None or name in ("_", "#_"):
            raise Unverifiable(
                f"`${{{name}}}`: an expansion with an operator, an indirection or a "
                "transformation is not modeled"
            )
        word.add("x", "${" + name + "}")
    elif char == "[":
        raise Unverifiable("`$[...]` arithmetic evaluates names and subscripts as code")
    elif char == "'" and not quoted:
        reader.take()
        word.add("a", _ansi_c(parser))
    elif char == '"' and not quoted:
        raise Unverifiable('`$"..."` is translated by the locale')
    elif char in _NAME_START:
        letters = [reader.take()]
        while reader.peek() in _NAME_CHARS:
            letters.append(reader.take())
        if letters == ["_"]:
            raise Unverifiable("`$_` is the previous command's last argument")
        word.add("x", "$" + "".join(letters))
    elif (char.isascii() and char.isdigit()) or (char in _SPECIAL and char):
        word.add("x", "$" + reader.take())
    else:
        word.add("d" if quoted else "u", "$")


def _ansi_c(parser: Nesting) -> str:
    reader = parser.reader
    value: list[str] = []
    while True:
        char = reader.take_raw()
        if char == "":
            raise Unverifiable("an unterminated `$'`")
        if char == "'":
            return "".join(value)
        if char == "\\":
            escaped = reader.take_raw()
            if escaped not in _ANSI_ESCAPES or escaped == "":
                raise Unverifiable(f"the `$'...'` escape `\\{escaped}` is not modeled")
            value.append(_ANSI_ESCAPES[escaped])
        else:
            if char == "\n" and parser.pending_heredocs():
                raise Unverifiable(
                    "a line break inside quotes while a here-document waits for its body"
                )
            value.append(char)
