"""A rule compiled for matching: which tools it names, and its pattern per kind.

The tool part is compiled once; the pattern is compiled on first use for the kind of
argument it meets (a command pattern for `bash`, a path pattern for the file tools,
a text glob for the rest), since `edit(src/**)` and `bash(git *)` read differently.
Two questions are asked, because allow and deny differ on compound arguments:

- `hits`: does the pattern match any part (deny and ask: any simple command of a
  bash line, any path a `grep` of a directory reaches);
- `covers_command` / `covers`: does it match this part, or the whole (allow: a
  directory tree only when every path below it matches).
"""

from __future__ import annotations

import fnmatch
import heapq
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from assembler.permissions.bash import SimpleCommand
from assembler.permissions.command_patterns import (
    HOLE,
    CommandPattern,
    compile_command_pattern,
)
from assembler.permissions.path_patterns import PathPattern, compile_path_pattern
from assembler.permissions.rules import Rule, Verdict, parse_rule
from assembler.permissions.subjects import Subject


@dataclass
class CompiledRule:
    rule: Rule
    verdict: Verdict
    session: bool = False
    _tool: re.Pattern[str] = field(init=False, repr=False)
    _server: re.Pattern[str] | None = field(init=False, repr=False)
    _command: CommandPattern | None = field(default=None, init=False, repr=False)
    _path: PathPattern | None = field(default=None, init=False, repr=False)
    _text: re.Pattern[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._tool = re.compile(fnmatch.translate(self.rule.tool))
        server = self.rule.server
        self._server = re.compile(fnmatch.translate(server)) if server is not None else None
        if self.rule.pattern is not None and self.rule.tool == "bash" and server is None:
            self._command = compile_command_pattern(self.rule.pattern)  # fail early

    @classmethod
    def parse(cls, text: str, verdict: Verdict, *, session: bool = False) -> CompiledRule:
        return cls(parse_rule(text), verdict, session)

    @property
    def text(self) -> str:
        return self.rule.text

    def names(self, tool_name: str, source: str) -> bool:
        if self._server is not None:
            server = source.removeprefix("mcp:") if source.startswith("mcp:") else None
            if server is None or self._server.fullmatch(server) is None:
                return False
        return self._tool.fullmatch(tool_name) is not None

    def hits(self, subject: Subject) -> bool:
        """Deny/ask: the pattern matches some part of the argument."""
        pattern = self.rule.pattern
        if pattern is None:
            return True
        if subject.value is None or subject.kind is None:
            return False
        if subject.kind == "command":
            assert subject.line is not None
            command = self.command_pattern()
            return any(command.could_match(v) for c in subject.line.commands for v in c.deny_views)
        if subject.kind == "path":
            return self.path_pattern().matches(subject.value)
        if subject.kind == "tree":
            return self.path_pattern().reaches(subject.value)
        return self.text_pattern().fullmatch(subject.value) is not None

    def covers(self, subject: Subject) -> bool:
        """Allow, for a path or text argument: the pattern matches all of it."""
        if self.rule.pattern is None:
            return True
        if subject.value is None:
            return False
        if subject.kind == "path":
            return self.path_pattern().matches(subject.value)
        if subject.kind == "tree":
            return self.path_pattern().covers(subject.value)
        if subject.kind == "text":
            return self.text_pattern().fullmatch(subject.value) is not None
        return False

    def covers_command(self, command: SimpleCommand) -> bool:
        """Allow, for one simple command of a bash line."""
        if self.rule.pattern is None:
            return True
        if command.problem:
            return False
        pattern = self.command_pattern()
        return any(pattern.matches(view) for view in command.allow_views)

    def command_pattern(self) -> CommandPattern:
        if self._command is None:
            self._command = compile_command_pattern(self.rule.pattern or "*")
        return self._command

    def path_pattern(self) -> PathPattern:
        if self._path is None:
            self._path = compile_path_pattern(self.rule.pattern or "**")
        return self._path

    def text_pattern(self) -> re.Pattern[str]:
        if self._text is None:
            self._text = re.compile(fnmatch.translate(self.rule.pattern or "*"), re.DOTALL)
        return self._text


class CommandIndex:
    """Many rules' command patterns, looked up by the command's first word.

    A rule whose pattern starts with a literal word (`git diff *`) is tried only on
    commands with that first word; the others (`*`, `git*`) on every command. Rules
    are tried in list order, each at most once per text, so a decision costs at most
    the number of rules times the length of the command (see the bench): one regular
    expression alternation of all patterns cost time growing with the square of the
    number of rules.
    """

    def __init__(self, rules: list[CompiledRule]) -> None:
        self.bare = next((r for r in rules if r.rule.pattern is None), None)
        self.rules = [r for r in rules if r.rule.pattern is not None]
        self._patterns = [r.command_pattern() for r in self.rules]
        self._by_key: dict[str, list[int]] = {}
        self._anywhere: list[int] = []
        for index, pattern in enumerate(self._patterns):
            key = pattern.key
            if key is None:
                self._anywhere.append(index)
            else:
                self._by_key.setdefault(key, []).append(index)

    def _candidates(self, text: str) -> Iterable[int]:
        bucket = self._by_key.get(text.split(" ", 1)[0], [])
        if not self._anywhere:
            return bucket
        if not bucket:
            return self._anywhere
        return heapq.merge(bucket, self._anywhere)

    def first(self, texts: Iterable[str]) -> int | None:
        """The index of the first rule whose pattern matches one of `texts`."""
        found: int | None = None
        patterns = self._patterns
        for text in texts:
            for index in self._candidates(text):
                if found is not None and index >= found:
                    break
                pattern = patterns[index]
                if text.startswith(pattern.pieces[0]) and pattern.matches(text):
                    found = index
                    break
        return found

    def possible(self, texts: Iterable[str]) -> int | None:
        """The index of the first rule some value of the texts' holes could match."""
        found: int | None = None
        for text in texts:
            if HOLE not in text:
                continue
            if HOLE in text.split(" ", 1)[0]:
                candidates: Iterable[int] = range(len(self.rules))
            else:
                candidates = self._candidates(text)
            for index in candidates:
                if found is not None and index >= found:
                    break
                if self._patterns[index].could_match(text):
                    found = index
                    break
        return found
