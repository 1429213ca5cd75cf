"""A second reading of a command line, by tree-sitter's bash grammar.

tree-sitter-bash is a model of bash, not bash: it reads here-documents, backquotes,
subscripts and `[[` differently (DESIGN.md, "A parser is a model of a program"). It
is never what allows a line. It is used for two things:

- a line the recognizer cannot verify is still searched for commands a deny rule
  names (`bash(rm *)` denies `x=$((1)); rm y` rather than only asking about it);
- a line the recognizer accepts is compared with this reading: when tree-sitter sees
  a command name the recognizer does not (or the other way round), one of the two
  models is wrong about the line, and it is unverifiable.

The tree is walked with an explicit stack, never Python recursion: a line nested a
thousand levels deep is read like any other. tree-sitter's own time grows faster than
the length on some lines (thousands of `$[`, `<<-A` or `f()`), so the parse reads
its input through a callback that ends it after `BUDGET` seconds of CPU; a reading
cut short is reported as such (the line is then unverifiable).
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from typing import TYPE_CHECKING

from assembler.permissions.wrappers import Word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser


#: CPU seconds tree-sitter may spend on one line (ordinary lines take milliseconds).
BUDGET = 0.5
_CHUNK = 4096


def treesitter_commands(text: str) -> list[list[Word]]:
    """Every simple command tree-sitter sees in `text`, as words (values for literal
    words, source text for the others)."""
    return treesitter_reading(text)[0]


def treesitter_reading(text: str) -> tuple[list[list[Word]], bool]:
    """The commands, and whether tree-sitter read the whole line within `BUDGET`."""
    data = text.encode("utf-8", "surrogateescape")
    deadline = time.thread_time() + BUDGET
    complete = True

    def read(offset: int, _point: object) -> bytes:
        nonlocal complete
        if time.thread_time() > deadline:
            complete = offset >= len(data)
            return b""
        return data[offset : offset + _CHUNK]

    tree = _parser().parse(read)
    found: list[list[Word]] = []
    stack: list[Node] = [tree.root_node]
    while stack:
        if time.thread_time() > deadline:
            return found, False
        node = stack.pop()
        if node.type == "command":
            found.extend(_words(node, data))
        stack.extend(reversed(node.named_children))
    return found, complete


@lru_cache(maxsize=1)
def _parser() -> Parser:
    # Imported on first use: `assemble validate` never parses a command.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _words(node: Node, data: bytes) -> list[list[Word]]:
    """The words of a `command` node; tree-sitter can swallow a newline into a command
    (`a | b<newline>rm x` parses as `b rm x`), so a newline between two words starts
    another command, as in bash."""
    commands: list[list[Word]] = []
    words: list[Word] = []
    previous_end = node.start_byte
    for child in node.named_children:
        gap = data[previous_end : child.start_byte]
        previous_end = child.end_byte
        if words and b"\n" in gap.replace(b"\\\n", b""):
            commands.append(words)
            words = []
        if child.type in ("variable_assignment", "file_redirect", "heredoc_redirect"):
            continue
        if child.type == "herestring_redirect":
            continue
        target = child.named_children[0] if child.type == "command_name" else child
        if child.type == "command_name" and not child.named_children:
            continue
        words.append(Word(*_value(target)))
    if words:
        commands.append(words)
    return commands


_LEAVES = frozenset({"word", "raw_string", "number", "string"})
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r'\\([\\"$`])')


def _value(node: Node) -> tuple[str, bool]:
    """A word's value as the program receives it, and whether that is known now."""
    kind = node.type
    text = (node.text or b"").decode("utf-8", "surrogateescape")
    if kind == "word":
        return _ESCAPE.sub(r"\1", text.replace("\\\n", "")), True
    if kind == "number":
        return text, True
    if kind == "raw_string":
        return text[1:-1], True
    if kind == "string" and all(c.type == "string_content" for c in node.named_children):
        return _DQ_ESCAPE.sub(r"\1", text[1:-1].replace("\\\n", "")), True
    if kind == "concatenation" and all(c.type in _LEAVES for c in node.children):
        parts = [_value(c) for c in node.children]  # leaves: no deeper recursion
        return "".join(p for p, _ in parts), all(literal for _, literal in parts)
    return text, False
