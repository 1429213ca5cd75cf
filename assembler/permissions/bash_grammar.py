"""The recognizer: a deliberately small subset of bash's grammar, modeled exactly.

A line is read the way `bash -c LINE` reads it (non-interactive: no aliases, no
history expansion, `extglob` off) and is accepted only when every construct in it is
one of these:

- simple commands: words (`assembler.permissions.bash_words`) and redirections; no
  assignment (`NAME=value cmd` changes what runs: `PATH=.`, `LD_PRELOAD=...`);
- pipelines (`|`, `|&`) with `!` and `time [-p]` before them; lists with `&&`, `||`,
  `;`, `&` and newlines; comments;
- `( list )`, `{ list; }`, `if/then/elif/else/fi`, `while` and `until` loops;
- redirections: `<`, `>`, `>>`, `>|`, `<>`, `&>`, `&>>`, `<&`, `>&` with an optional fd
  number, `<<<` words, and here-documents whose delimiter is a plain word written
  `WORD`, `'WORD'` or `"WORD"` (a quoted one has a literal body; an unquoted one only
  when its body holds no `$`, backquote or backslash);
- `$(...)`, `<(...)`, `>(...)`, parsed with this same grammar.

Everything else raises `Unverifiable`: `case`, `for`, `select`, `[[`, `((`, functions,
`coproc`, `{fd}>` redirections, partly quoted here-document delimiters, a here-document
body line that starts like its end line (bash 5.2 ends a body inside `$(` at `EOF)`),
a line break inside a word or a substitution while a body is pending, and nesting
deeper than `MAX_DEPTH`. Nesting is bounded, so Python's own recursion limit is never
reached whatever the line.

The output is the simple commands (their words, and why their redirections keep them
from being allowed) and the problems of the line as a whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assembler.permissions.bash_reader import METACHARACTERS, Reader, Unverifiable
from assembler.permissions.bash_words import ShellWord, read_word

#: Nested constructs (`$(`, groups, loops ...) deeper than this are not followed.
MAX_DEPTH = 40

RESERVED = frozenset(
    [
        "!",
        "case",
        "coproc",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "fi",
        "for",
        "function",
        "if",
        "in",
        "select",
        "then",
        "time",
        "until",
        "while",
        "{",
        "}",
        "[[",
        "]]",
    ]
)
_OPERATORS = (
    ";;&", "<<-", "<<<", "&>>",
    ";;", ";&", "&&", "||", "|&", "<<", ">>", "<&", ">&", "<>", ">|", "&>",
    "\n", "|", "&", ";", "(", ")", "<", ">",
)  # fmt: skip
_BY_FIRST = {c: [op for op in _OPERATORS if op[0] == c] for c in ";&|<>()\n"}
_REDIRECTIONS = frozenset(["<<-", "<<<", "&>>", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">"])
_FD = re.compile(r"[0-9]+")
_DUPLICATE = re.compile(r"[0-9]+-?|-")
_DELIMITER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\+?=|\[)")
_QUIET_OUTPUT = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_QUIET_INPUT = frozenset({"/dev/null", "/dev/stdin"})
_WORD_END = METACHARACTERS | frozenset("'\"\\$`")


@dataclass(frozen=True)
class RawCommand:
    """A simple command as bash will run it: its words, and `problem`, why its own
    redirections keep a rule from allowing it ("" when none do)."""

    words: tuple[ShellWord, ...]
    problem: str = ""


@dataclass
class _Heredoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool


@dataclass
class Recognized:
    commands: list[RawCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def recognize(text: str) -> Recognized:
    """The simple commands of `text`, or `Unverifiable`."""
    parser = _Parser(text)
    try:
        parser.program()
    except Unverifiable as exc:
        exc.partial = list(parser.found.commands)
        raise
    return parser.found


class _Parser:
    def __init__(self, text: str) -> None:
        self._reader = Reader(text)
        self.depth = 0
        self.frames: list[list[_Heredoc]] = [[]]
        self.found = Recognized()

    # -- what reading a word needs (bash_words.Nesting) --

    @property
    def reader(self) -> Reader:
        return self._reader

    def pending_heredocs(self) -> bool:
        return any(self.frames)

    def substitution(self) -> None:
        self._enter()
        self.frames.append([])
        try:
            self.list_(frozenset(), ")")
            self._reader.take()
            if self.frames[-1]:
                raise Unverifiable("a here-document inside `$(...)` has no body inside it")
        finally:
            self.frames.pop()
            self.depth -= 1

    # -- the grammar --

    def program(self) -> None:
        self.list_(frozenset(), None)
        if self.pending_heredocs():
            raise Unverifiable("a here-document has no body")

    def list_(self, closers: frozenset[str], close_op: str | None) -> str:
        """Commands separated by `;`, `&` and newlines, up to a reserved word in
        `closers` (consumed), the operator `close_op` (not consumed) or the end."""
        while True:
            self.linebreaks()
            found = self._stop(closers, close_op)
            if found is not None:
                return found
            self.and_or()
            self.blanks()
            operator = self.operator()
            if operator in (";", "&"):
                self._reader.take()
            elif operator != "\n" and self._stop(closers, close_op) is None:
                shown = operator or self._reader.peek()
                raise Unverifiable(f"unexpected `{shown}` after a command")

    def _stop(self, closers: frozenset[str], close_op: str | None) -> str | None:
        if self._reader.at_end():
            if closers or close_op:
                raise Unverifiable("the line ends inside a construct")
            return ""
        if close_op is not None and self.operator() == close_op:
            return close_op
        if closers:
            word = self.peek_plain()
            if word in closers:
                self._reader.take_many(len(word))
                return word
        return None

    def and_or(self) -> None:
        self.pipeline()
        while True:
            self.blanks()
            if self.operator() not in ("&&", "||"):
                return
            self._reader.take_many(2)
            self.linebreaks()
            self.pipeline()

    def pipeline(self) -> None:
        while True:
            self.blanks()
            word = self.peek_plain()
            if word == "!":
                self._reader.take()
            elif word == "time":
                self._reader.take_many(4)
                self.blanks()
                if self.peek_plain() == "-p":
                    self._reader.take_many(2)
                    self.blanks()
                if self._reader.peek() == "-":  # `--` ends its options: not modeled
                    raise Unverifiable("`time` with an option other than `-p`")
            else:
                break
        self.command()
        while True:
            self.blanks()
            operator = self.operator()
            if operator not in ("|", "|&"):
                return
            self._reader.take_many(len(operator))
            self.linebreaks()
            self.command()

    def command(self) -> None:
        self._enter()
        try:
            self.blanks()
            operator = self.operator()
            if operator == "(":
                self._reader.take()
                if self._reader.peek() == "(" or self._reader.peek_raw() == "(":
                    raise Unverifiable("`((...))` evaluates arithmetic")
                self.list_(frozenset(), ")")
                self._reader.take()
                self.compound_redirections()
            elif operator and operator not in _REDIRECTIONS:
                raise Unverifiable(f"`{operator.strip() or 'a line break'}` where a command starts")
            elif (word := self.peek_plain()) in RESERVED and word is not None:
                self._compound(word)
            else:
                self.simple()
        finally:
            self.depth -= 1

    def _compound(self, word: str) -> None:
        self._reader.take_many(len(word))
        if word == "{":
            self.list_(frozenset({"}"}), None)
        elif word == "if":
            self.list_(frozenset({"then"}), None)
            while True:
                ended = self.list_(frozenset({"elif", "else", "fi"}), None)
                if ended == "elif":
                    self.list_(frozenset({"then"}), None)
                elif ended == "else":
                    self.list_(frozenset({"fi"}), None)
                    break
                else:
                    break
        elif word in ("while", "until"):
            self.list_(frozenset({"do"}), None)
            self.list_(frozenset({"done"}), None)
        else:
            raise Unverifiable(f"`{word}` is not modeled")
        self.compound_redirections()

    def compound_redirections(self) -> None:
        while True:
            self.blanks()
            if self.operator() in _REDIRECTIONS:
                self._problem(self.redirection(""))
                continue
            digits = self._fd_ahead()
            if digits is None:
                return
            self._reader.take_many(len(digits))
            self._problem(self.redirection(digits))

    def simple(self) -> None:
        reader = self._reader
        words: list[ShellWord] = []
        problem = ""
        while True:
            self.blanks()
            operator = self.operator()
            if operator in _REDIRECTIONS:
                problem = self.redirection("") or problem
                continue
            if operator or reader.at_end():
                break
            word = read_word(self)
            after = reader.peek()
            if after and after in "<>":
                if word.plain and _FD.fullmatch(word.value):
                    problem = self.redirection(word.value) or problem
                    continue
                if word.source.startswith("{"):
                    raise Unverifiable("a `{name}>` redirection assigns a shell variable")
            words.append(word)
        if self.operator() == "(":
            raise Unverifiable("`(` after a word: a function definition")
        if not words:
            self._problem(problem)
            return
        first = words[0]
        if first.plain and first.value in RESERVED:
            raise Unverifiable(f"`{first.value}` after a redirection")
        if first.shape[0][0] == "u" and _ASSIGNMENT.match(first.shape[0][1]):
            raise Unverifiable("sets a shell variable")
        self.found.commands.append(RawCommand(tuple(words), problem))

    def redirection(self, fd: str) -> str:
        """Read one redirection; return why it keeps a rule from allowing the command
        ("" when it does not: a duplicated descriptor, `/dev/null`, a here-document,
        reading a plain relative file)."""
        reader = self._reader
        operator = self.operator()
        reader.take_many(len(operator))
        reader.skip_blanks()
        if self.operator() or reader.at_end() or reader.peek() == "#":
            raise Unverifiable("a redirection without a target")
        target = read_word(self)
        if operator in ("<<", "<<-"):
            self.frames[-1].append(_heredoc(target, operator == "<<-"))
            return ""
        if operator == "<<<":
            return ""
        value = target.value
        if operator in ("<&", ">&") and target.plain and _DUPLICATE.fullmatch(value):
            return ""
        if target.literal:
            if operator in ("<", "<&") and value in _QUIET_INPUT:
                return ""
            if operator not in ("<", "<&") and value in _QUIET_OUTPUT:
                return ""
            if operator == "<" and _plain_relative(value):
                return ""
        return f"the redirection `{fd}{operator} {target.source}` touches a file"

    # -- tokens --

    def blanks(self) -> None:
        """Blanks and a comment (a `#` where a word would start)."""
        reader = self._reader
        reader.skip_blanks()
        if reader.peek() == "#":
            reader.take()
            reader.rest_of_line_raw()

    def linebreaks(self) -> None:
        while True:
            self.blanks()
            if self.operator() != "\n":
                return
            self._reader.take()
            if any(self.frames[:-1]):
                raise Unverifiable("a line break inside `$(...)` while a here-document is pending")
            for doc in self.frames[-1]:
                self._body(doc)
            self.frames[-1].clear()

    def operator(self) -> str:
        """The operator starting here ("" for a word or the end)."""
        ahead = self._reader.peek_many(3)
        if not ahead or ahead[0] not in _BY_FIRST or ahead[:2] in ("<(", ">("):
            return ""
        for op in _BY_FIRST[ahead[0]]:
            if ahead.startswith(op):
                return op
        return ""  # pragma: no cover - every first character has a one-character operator

    def peek_plain(self) -> str | None:
        """The next word when it is made of unquoted, unexpanded characters only
        (a reserved word is recognized only then), else None."""
        reader = self._reader
        saved = reader.pos
        chars: list[str] = []
        try:
            while (char := reader.peek()) and char not in _WORD_END:
                chars.append(reader.take())
            if char and char not in METACHARACTERS:
                return None  # quoted or expanded further on
            return "".join(chars) if chars else None
        finally:
            reader.pos = saved

    def _fd_ahead(self) -> str | None:
        reader = self._reader
        saved = reader.pos
        digits: list[str] = []
        while (char := reader.peek()).isascii() and char.isdigit() and char:
            digits.append(reader.take())
        after = reader.peek()
        reader.pos = saved
        if digits and after and after in "<>" and reader.peek_many(len(digits) + 2)[-1:] != "(":
            return "".join(digits)
        return None

    def _body(self, doc: _Heredoc) -> None:
        reader = self._reader
        while True:
            if reader.pos >= reader.end:
                raise Unverifiable(f"the here-document has no `{doc.delimiter}` line")
            line, _ = reader.line_raw()
            compared = line.lstrip("\t") if doc.strip_tabs else line
            if compared == doc.delimiter:
                return
            if compared.lstrip(" \t").startswith(doc.delimiter):
                raise Unverifiable(
                    f"a here-document line starts like its end line `{doc.delimiter}`"
                )
            if not doc.quoted and any(c in line for c in "$`\\"):
                raise Unverifiable(
                    "an unquoted here-document body with `$`, a backquote or a backslash "
                    "is expanded by bash"
                )

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unverifiable(f"nested more than {MAX_DEPTH} levels deep")

    def _problem(self, problem: str) -> None:
        if problem:
            self.found.problems.append(problem)


def _heredoc(word: ShellWord, strip_tabs: bool) -> _Heredoc:
    """A here-document delimiter written `WORD`, `'WORD'` or `"WORD"`."""
    if len(word.shape) == 1:
        kind, text = word.shape[0]
        if kind in "usd" and _DELIMITER.fullmatch(text) and word.literal:
            return _Heredoc(text, kind != "u", strip_tabs)
    raise Unverifiable(
        f"the here-document delimiter `{word.source}` is partly quoted or not a plain word"
    )


def _plain_relative(path: str) -> bool:
    return path != "" and not path.startswith(("/", "-")) and ".." not in path.split("/")
