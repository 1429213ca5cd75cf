"""Python source parsed once per process, under one lock.

Validation, the trust check and `render --dry-run` all ask about the same module,
often once per tool, so each file is parsed once and kept in a small process-wide
cache (`parsed_module`), checked against the file's `stat` on every use; with the
tree, the names the module binds when it is imported (`ParsedModule.definitions`).
Every `ast.parse` in the package goes through one lock (`parse_source`): CPython 3.11
keeps the AST constructor's recursion depth per interpreter, not per thread, and two
threads parsing at once can fail with `SystemError: AST constructor recursion depth
mismatch`; Jinja2's template lexer builds trees too (`building_syntax_trees`).
`assembler.python_refs` finds and imports the code these files hold.
"""

from __future__ import annotations

import ast
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar, cast

_T = TypeVar("_T")

# Reentrant: a garbage-collector callback that parses while this thread is parsing
# must not deadlock (nested parses in one thread keep the depth balanced).
_PARSE_LOCK = threading.RLock()

MAX_CACHED_FILES = 32
MAX_CACHED_SOURCE_BYTES = 2 * 1024 * 1024  # a syntax tree takes ~30x its source in memory


@contextmanager
def building_syntax_trees() -> Iterator[None]:
    """Hold the parse lock around code outside this module that builds Python syntax
    trees: Jinja2's lexer reads every number literal of a template with
    `ast.literal_eval`, so parsing a template races with `parse_source` in another
    thread exactly as two parses do."""
    with _PARSE_LOCK:
        yield


def parse_source(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` under the package's parse lock (see the module docstring). Source
    nested too deeply for the parser raises `SyntaxError` too, never a crash."""
    with _PARSE_LOCK, _too_deep_is_a_syntax_error():
        return ast.parse(source, filename=filename)


def parse_expression(text: str) -> ast.expr:
    """One expression (a string annotation), parsed like `parse_source`."""
    with _PARSE_LOCK, _too_deep_is_a_syntax_error():
        return ast.parse(text, mode="eval").body


@contextmanager
def _too_deep_is_a_syntax_error() -> Iterator[None]:
    try:
        yield
    except (RecursionError, MemoryError):
        # CPython's parser runs out of stack (MemoryError) or the tree builder out of
        # recursion (RecursionError) on absurdly nested code.
        raise SyntaxError("nested too deeply to parse") from None


@dataclass(frozen=True, eq=False)
class ParsedModule:
    """One parsed source file: its tree (None when it cannot be parsed, `error` says
    why) and, by name, the first top-level statement binding that name, which is the
    statement `check_source` judges a reference by (also one under a module-level `if`
    or `try`, which runs when the module is imported).

    The tree is shared by every caller and every thread: read it, never change it.
    `derive` keeps whatever a caller computes from the tree alongside it, so the work
    is done once per parse and dropped with it. Compared by identity: one per parse.
    """

    path: Path
    tree: ast.Module | None
    error: str = ""
    definitions: Mapping[str, ast.stmt] = field(default_factory=lambda: MappingProxyType({}))
    size: int = 0
    conditional: frozenset[str] = frozenset()
    """Names first bound under a module-level `if`/`try` and bound again elsewhere:
    which binding the module ends up with is only decided when it runs."""
    _derived: dict[object, object] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def derive(self, make: Callable[[ast.Module], _T]) -> _T:
        """`make(tree)`, computed once per parsed file (the tree must be there)."""
        assert self.tree is not None, "derive() on a file that did not parse"
        with self._lock:
            if make not in self._derived:
                self._derived[make] = make(self.tree)
            return cast(_T, self._derived[make])


_StatKey = tuple[int, int, int, int, int]


class ParsedSources:
    """Parsed files, least recently used first; at most `max_files` of them and
    `max_bytes` of source, except that the file just parsed is always kept (a module
    bigger than the budget must still be parsed once per command, not once per tool).

    An entry is used only while the file's device, inode, size, mtime and ctime are
    those read before it was parsed, so an edited file is parsed again; ctime cannot
    be set back by a tool, so a rewrite within one mtime tick is still seen.
    """

    def __init__(
        self, max_files: int = MAX_CACHED_FILES, max_bytes: int = MAX_CACHED_SOURCE_BYTES
    ) -> None:
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.parses = 0
        self._entries: OrderedDict[Path, tuple[_StatKey, ParsedModule]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, path: Path) -> ParsedModule:
        path = Path(os.path.abspath(path))
        try:
            info = path.stat()
        except OSError as e:
            return ParsedModule(path, None, f"cannot parse {path.name} ({e})")
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        with self._lock:
            cached = self._entries.get(path)
            if cached is not None and cached[0] == key:
                self._entries.move_to_end(path)
                return cached[1]
        parsed = _parse_file(path)
        with self._lock:
            self.parses += 1
            self._put(path, key, parsed)
        return parsed

    def _put(self, path: Path, key: _StatKey, parsed: ParsedModule) -> None:
        old = self._entries.pop(path, None)
        if old is not None:
            self._bytes -= old[1].size
        self._entries[path] = (key, parsed)
        self._bytes += parsed.size
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_files or self._bytes > self.max_bytes
        ):
            _, (_, evicted) = self._entries.popitem(last=False)
            self._bytes -= evicted.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_SOURCES = ParsedSources()


def parsed_module(path: Path) -> ParsedModule:
    """`path` parsed, from the process-wide cache when the file has not changed."""
    return _SOURCES.get(path)


def source_cache() -> ParsedSources:
    """The process-wide cache (benchmarks and tests read `parses`, or `clear()` it)."""
    return _SOURCES


def _parse_file(path: Path) -> ParsedModule:
    try:
        source = path.read_bytes()
        tree = parse_source(source, filename=str(path))
    except (OSError, SyntaxError, ValueError) as e:
        if isinstance(e, SyntaxError):
            reason = f"line {e.lineno}: {e.msg}" if e.lineno else e.msg
        else:
            reason = str(e)
        return ParsedModule(path, None, f"cannot parse {path.name} ({reason})")
    first, conditional = _first_bindings(tree)
    return ParsedModule(path, tree, definitions=first, size=len(source), conditional=conditional)


def _first_bindings(tree: ast.Module) -> tuple[Mapping[str, ast.stmt], frozenset[str]]:
    """Each module-level name with the first statement that defines, assigns or
    imports it (the statement a reference to that name is judged by), and the names
    whose first binding sits under an `if`/`try` and that are bound more than once."""
    first: dict[str, ast.stmt] = {}
    nested: set[str] = set()
    rebound: set[str] = set()
    for node, inside in _module_level(tree.body, False):
        for name in _bound_names(node):
            if name in first:
                rebound.add(name)
                continue
            first[name] = node
            if inside:
                nested.add(name)
    return MappingProxyType(first), frozenset(nested & rebound)


def _module_level(body: list[ast.stmt], inside: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """The statements that run when the module is imported, in source order: the
    top level and, below it, the branches of `if` and `try` (flagged `inside`)."""
    for node in body:
        yield node, inside
        if isinstance(node, ast.If):
            yield from _module_level([*node.body, *node.orelse], True)
        elif isinstance(node, ast.Try | ast.TryStar):
            handlers = [statement for handler in node.handlers for statement in handler.body]
            yield from _module_level([*node.body, *handlers, *node.orelse, *node.finalbody], True)


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign):
        return [node.target.id] if isinstance(node.target, ast.Name) else []
    if isinstance(node, ast.ImportFrom | ast.Import):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    return []
