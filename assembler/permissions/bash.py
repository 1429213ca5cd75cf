"""Split a bash command line into the simple commands it runs, with a real grammar.

The line is parsed by tree-sitter's bash grammar (the parser Claude Code uses), never
by splitting on `;` by hand: `$(...)`, backquotes, subshells, process substitution,
here-documents, `&&`/`||`/`|`/newlines and quoting are all the grammar's job. Every
`command` node anywhere in the tree becomes a `SimpleCommand`, nested ones included
(`git diff $(rm x)` is two commands).

Safety comes from an allowlist: node types this module understands are walked;
anything else (a parse error, `[[ ... ]]` with expansions, a `for` loop's variable,
a function definition, an assignment, a redirection to a file) is recorded as a
*problem*, and a line with a problem is never allowed by a rule. A problem is also
*hidden* when part of what would run cannot be seen (`eval "$x"`, a computed
command name), so that a deny rule cannot be ruled out either.

Parses are cached by command text: an agent repeats its commands, and a decision
then costs only the pattern matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from assembler.permissions.wrappers import Word, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

#: How deep `bash -c 'bash -c ...'` strings are followed before giving up (hidden).
MAX_NESTING = 4

_STRUCTURE = frozenset(
    [
        "program",
        "list",
        "pipeline",
        "subshell",
        "negated_command",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "do_group",
        "case_statement",
        "case_item",
        "comment",
        "heredoc_body",
        "heredoc_start",
        "heredoc_content",
        "heredoc_end",
        "command_substitution",
        "process_substitution",
        "string",
        "string_content",
        "concatenation",
        "word",
        "raw_string",
        "number",
        "simple_expansion",
        "expansion",
        "variable_name",
        "special_variable_name",
        "command_name",
        "file_descriptor",
        "ansi_c_string",
        "translated_string",
        "extglob_pattern",
        "array",
        "subscript",
        "regex",
        "binary_expression",
        "unary_expression",
        "parenthesized_expression",
        "postfix_expression",
        "ternary_expression",
        "test_operator",
    ]
)
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_EXPANDING = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution"}
)
_NOT_UNDERSTOOD = {
    "function_definition": ("defines a shell function", False),
    "for_statement": ("a `for` loop sets a shell variable", False),
    "c_style_for_statement": ("a `for ((...))` loop evaluates arithmetic", False),
    "declaration_command": ("declares shell variables", False),
    "unset_command": ("unsets shell variables", False),
    "variable_assignment": ("sets a shell variable", False),
    "variable_assignments": ("sets shell variables", False),
    "brace_expression": ("uses brace expansion", False),
}
_QUIET_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ASSIGNING = re.compile(r"(?<![=!<>])=(?!=)|\+\+|--")
_ASSIGNING_EXPANSION = re.compile(r"^\$\{[#!]?[^}:=+?/%#^,-]*(?:\[[^\]]*\])?:?=")


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: `text` as written (canonical: word values joined by one
    space), the texts allow and deny rules are matched against, and `problem`, why no
    allow rule can cover it (empty when one can)."""

    text: str
    allow_views: tuple[str, ...]
    deny_views: tuple[str, ...]
    problem: str = ""
    words: tuple[str, ...] = ()


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
    """The simple commands of `command` (cached: see the module docstring)."""
    return _parse_cached(command)


def parse_cache_clear() -> None:
    _parse_cached.cache_clear()


@lru_cache(maxsize=4096)
def _parse_cached(command: str) -> CommandLine:
    walker = _Walker()
    walker.line(command, 0)
    problems = tuple(dict.fromkeys(walker.problems))
    return CommandLine(command, tuple(walker.commands), problems, walker.hidden)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    # Imported on first use: `assemble validate` never parses a command.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


class _Walker:
    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.problems: list[str] = []
        self.hidden = False
        self.depth = 0

    def problem(self, reason: str, hidden: bool) -> None:
        self.problems.append(reason)
        self.hidden = self.hidden or hidden

    def line(self, command: str, depth: int) -> None:
        if depth > MAX_NESTING:
            self.problem("command strings nested too deeply", True)
            return
        if "\x00" in command:
            self.problem("the command contains a NUL character", True)
            return
        tree = _parser().parse(command.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.problem("bash cannot parse the command", True)
        saved, self.depth = self.depth, depth
        self.walk(tree.root_node, "")
        self.depth = saved

    def walk(self, node: Node, writes: str) -> None:
        kind = node.type
        if node.is_missing or kind == "ERROR":
            self.problem("bash cannot parse the command", True)
        if not node.is_named:
            return
        if kind == "command":
            self.command(node, writes, ())
            return
        if kind == "redirected_statement":
            self.redirected(node, writes)
            return
        if kind in _REDIRECTS:
            reason, _ = self.redirect(node)
            if reason:
                self.problem(reason, False)
            for child in node.named_children:
                if child.type not in _REDIRECTS:
                    self.walk(child, writes)
            return
        if kind == "expansion" and _ASSIGNING_EXPANSION.match(_text(node)):
            self.problem("a `${name:=value}` expansion sets a shell variable", False)
        elif kind == "arithmetic_expansion" or _is_arithmetic_command(node):
            self.arithmetic(node)
        elif kind == "test_command" and _text(node).startswith("[["):
            if _has_expansion(node):
                self.problem("`[[ ... ]]` with expansions can evaluate code", True)
        elif kind in _NOT_UNDERSTOOD:
            reason, hidden = _NOT_UNDERSTOOD[kind]
            self.problem(reason, hidden)
        elif kind not in _STRUCTURE and kind not in ("compound_statement", "test_command", "ERROR"):
            self.problem(f"`{kind}` is not understood", True)
        for child in node.children:
            self.walk(child, writes)

    def arithmetic(self, node: Node) -> None:
        if _has_expansion(node):
            self.problem("arithmetic on expanded text can evaluate code", True)
        elif _ASSIGNING.search(_text(node).strip("$()")):
            self.problem("arithmetic that sets a shell variable", False)

    def redirected(self, node: Node, writes: str) -> None:
        body = node.child_by_field_name("body")
        extra: list[Word] = []
        for child in node.children_by_field_name("redirect"):
            reason, more = self.redirect(child)
            writes = writes or reason
            extra.extend(more)
        for child in node.named_children:
            if child == body:
                if child.type == "command":
                    self.command(child, writes, tuple(extra))
                else:
                    if extra:
                        self.problem("words after a redirection are not understood", True)
                    self.walk(child, writes)
            else:
                self.walk_redirect_parts(child)

    def walk_redirect_parts(self, node: Node) -> None:
        """What a redirection holds besides its target: substitutions, here-document
        bodies and what follows a here-document's start (`cat <<EOF | sh`)."""
        for child in node.named_children:
            if child.type in _REDIRECTS:
                self.walk_redirect_parts(child)
            else:
                self.walk(child, "")

    def redirect(self, node: Node) -> tuple[str, list[Word]]:
        """Why this redirection makes a command unallowable ("" when it does not), and
        the words after its target (bash reads `echo a >x b` as `echo a b >x`)."""
        if node.type == "herestring_redirect":
            return "", []
        if node.type == "heredoc_redirect":
            reasons = [self.redirect(c)[0] for c in node.named_children if c.type in _REDIRECTS]
            return next((r for r in reasons if r), ""), []
        operator = next((c.type for c in node.children if not c.is_named), "")
        targets = node.children_by_field_name("destination")
        if not targets:
            return ("", []) if operator.endswith("-") else ("a redirection is not understood", [])
        target, literal = _word(targets[0])
        extra = [Word(*_word(t)) for t in targets[1:]]
        if operator in (">&", "<&", ">&-", "<&-") and re.fullmatch(r"\d+|-", target):
            return "", extra
        if literal and target in _QUIET_TARGETS:
            return "", extra
        if operator == "<" and literal and _plain_relative(target):
            return "", extra
        return f"the redirection `{operator} {target}` touches a file", extra

    def command(self, node: Node, writes: str, extra: tuple[Word, ...]) -> None:
        assignments: list[Word] = []
        words: list[Word] = []
        problem = writes
        name_hidden = False
        source = node.text or b""
        previous_end = node.start_byte
        for child in node.named_children:
            gap = source[previous_end - node.start_byte : child.start_byte - node.start_byte]
            previous_end = child.end_byte
            if words and b"\n" in gap.replace(b"\\\n", b""):
                # tree-sitter-bash can swallow a newline into a command (`a | b\nrm x`
                # parses as `b rm x`); bash runs what follows as a new command.
                self.add(assignments, words, problem)
                assignments, words, problem = [], [], writes
            if child.type == "variable_assignment":
                assignments.append(Word(*_word(child)))
                for part in child.named_children:
                    self.walk(part, "")
            elif child.type in _REDIRECTS:
                reason, more = self.redirect(child)
                problem = problem or reason
                words.extend(more)
                self.walk_redirect_parts(child)
            else:
                if child.type == "command_name":
                    raw = _text(child)
                    value, literal = (
                        _word(child.named_children[0]) if child.named_children else ("", False)
                    )
                    if not literal or re.search(r"[*?\[]|\{.*(,|\.\.).*\}", raw):
                        name_hidden = True
                    words.append(Word(value, literal and not name_hidden))
                else:
                    words.append(Word(*_word(child)))
                self.walk(child, "")
        words.extend(extra)
        if name_hidden:
            self.problem("the command name is only known when it runs", True)
        if not words:
            if assignments:
                self.problem("sets a shell variable", False)
            return
        self.add(assignments, words, problem)
        if words[0].literal and words[0].value.rsplit("/", 1)[-1] == "find":
            self.find_exec(words)

    def add(self, assignments: list[Word], words: list[Word], problem: str) -> None:
        found = unwrap(words)
        if found.hidden:
            self.hidden = True
        for code in found.code:
            self.line(code, self.depth + 1)
        full = [*assignments, *words]
        allow = [_render(full)] + [_render(v) for v in found.allow_views[1:]]
        deny = [_render(full)] + [_render(v) for v in found.deny_views]
        last = found.deny_views[-1]
        if last and last[0].literal and "/" in last[0].value:
            deny.append(_render((Word(last[0].value.rsplit("/", 1)[-1]), *last[1:])))
        self.commands.append(
            SimpleCommand(
                _render(full),
                tuple(dict.fromkeys(allow)),
                tuple(dict.fromkeys(deny)),
                problem or found.problem,
                tuple(w.value for w in full),
            )
        )

    def find_exec(self, words: list[Word]) -> None:
        """`find ... -exec CMD {} ;` runs CMD: it is one more command to check."""
        i = 0
        while i < len(words):
            if words[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
                end = i + 1
                while end < len(words) and words[end].value not in (";", "+"):
                    end += 1
                if end > i + 1:
                    self.add([], words[i + 1 : end], "")
                i = end
            i += 1


def _render(words: tuple[Word, ...] | list[Word]) -> str:
    return " ".join(w.value for w in words)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _word(node: Node) -> tuple[str, bool]:
    """A word's value as the program receives it, and whether that is known now."""
    kind = node.type
    text = _text(node)
    if kind == "word":
        return _unescape(text), True
    if kind == "number":
        return text, True
    if kind == "raw_string":
        return text[1:-1], True
    if kind == "string":
        if all(c.type == "string_content" for c in node.named_children):
            return re.sub(r'\\([\\"$`])', r"\1", text[1:-1].replace("\\\n", "")), True
        return text, False
    if kind == "concatenation":
        parts = [_word(c) if c.is_named else (_text(c), False) for c in node.children]
        return "".join(p for p, _ in parts), all(literal for _, literal in parts)
    if kind == "variable_assignment":
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        shown, literal = _word(value) if value is not None else ("", True)
        return f"{_text(name) if name else ''}={shown}", literal
    return text, False


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.DOTALL)


def _has_expansion(node: Node) -> bool:
    if node.type in _EXPANDING:
        return True
    return any(_has_expansion(c) for c in node.named_children)


def _is_arithmetic_command(node: Node) -> bool:
    return node.type == "compound_statement" and _text(node).startswith("((")


def _plain_relative(path: str) -> bool:
    return not path.startswith(("/", "~")) and ".." not in path.split("/") and path != ""
