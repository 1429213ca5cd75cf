"""Reading a bash command line character by character, as bash's own lexer does.

Bash removes a backslash-newline pair ("line continuation") while it reads, before it
decides anything else: `r\\<newline>m x` is `rm x`, `&\\<newline>&` is `&&`. It does so
everywhere except where it reads text literally: inside single quotes (and `$'...'`),
in comments, right after an escaping backslash, and in the body of a here-document
whose delimiter is quoted. `Reader.take`/`peek` read the way bash's `shell_getc(1)`
does; `take_raw`/`peek_raw` the way `shell_getc(0)` does.

`Unverifiable` is how the recognizer says "bash may read this differently from any
model here": the line is then never allowed by a rule, and deny rules cannot rule it out.
"""

from __future__ import annotations

#: Bash's metacharacters: they end a word when unquoted.
METACHARACTERS = frozenset(" \t\n|&;()<>")
BLANKS = frozenset(" \t")


class Unverifiable(Exception):
    """The line holds a construct the recognizer does not model exactly (`reason`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.partial: list[object] = []  # what was read before it (for deny rules only)


class Reader:
    """A position in the text; see the module docstring for the two ways of reading."""

    __slots__ = ("end", "pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.end = len(text)

    def _skip(self, index: int) -> int:
        text = self.text
        while text.startswith("\\\n", index):
            index += 2
        return index

    def peek(self) -> str:
        """The next character, continuations removed ("" at the end)."""
        if self.pos < self.end and self.text[self.pos] != "\\":
            return self.text[self.pos]
        index = self._skip(self.pos)
        return self.text[index] if index < self.end else ""

    def peek_many(self, count: int) -> str:
        """Up to `count` next characters, continuations removed."""
        chunk = self.text[self.pos : self.pos + count]
        if "\\" not in chunk:
            return chunk  # no continuation can start among them
        found: list[str] = []
        index = self.pos
        while len(found) < count:
            index = self._skip(index)
            if index >= self.end:
                break
            found.append(self.text[index])
            index += 1
        return "".join(found)

    def take(self) -> str:
        """Consume and return the next character, continuations removed."""
        if self.pos < self.end and self.text[self.pos] != "\\":
            self.pos += 1
            return self.text[self.pos - 1]
        index = self._skip(self.pos)
        if index >= self.end:
            self.pos = self.end
            return ""
        self.pos = index + 1
        return self.text[index]

    def take_many(self, count: int) -> str:
        return "".join(self.take() for _ in range(count))

    def peek_raw(self) -> str:
        return self.text[self.pos] if self.pos < self.end else ""

    def take_raw(self) -> str:
        """Consume the next character as it is (no continuation removal)."""
        if self.pos >= self.end:
            return ""
        char = self.text[self.pos]
        self.pos += 1
        return char

    def skip_blanks(self) -> None:
        while self.peek() in BLANKS:
            self.take()

    def at_end(self) -> bool:
        return self._skip(self.pos) >= self.end

    def rest_of_line_raw(self) -> str:
        """Consume up to (not including) the next newline, literally: a comment."""
        newline = self.text.find("\n", self.pos)
        stop = self.end if newline < 0 else newline
        text = self.text[self.pos : stop]
        self.pos = stop
        return text

    def line_raw(self) -> tuple[str, bool]:
        """Consume one whole line literally (a here-document line), and whether it
        ended with a newline (False: it ended the text)."""
        newline = self.text.find("\n", self.pos)
        if newline < 0:
            line = self.text[self.pos :]
            self.pos = self.end
            return line, False
        line = self.text[self.pos : newline]
        self.pos = newline + 1
        return line, True
