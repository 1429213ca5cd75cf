"""Python code named in a manifest (`tools.fees:quote_fee`): find it without
importing it, and import it once trusted, from the same place.

`assemble validate` must not run project code, yet it should say when
`tools.fees:quote_fee` points at nothing. Importing would run the module; instead we
ask the path finder where the source file is (`PathFinder.find_spec` only looks at
the file system, it never executes a module, not even a package's `__init__`) and
read the function definitions from the parsed source.

Importing must search the same places in the same order as finding (the manifest's
directory, then the workspace, then installed packages), or a manifest that validates
would fail to run, or run a different module.

Parsing is shared: validation, the trust check and `render --dry-run` all ask about
the same module, often once per tool, so each file is parsed once and kept in a small
process-wide cache (`parsed_module`), checked against the file's `stat` on every use.
Every `ast.parse` in the package goes through one lock (`parse_source`): CPython 3.11
keeps the AST constructor's recursion depth per interpreter, not per thread, and two
threads parsing at once can fail with `SystemError: AST constructor recursion depth
mismatch`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TypeVar, cast

from assembler.stamped import StampedCache, module_search_paths

_T = TypeVar("_T")

# Reentrant: a garbage-collector callback that parses while this thread is parsing
# must not deadlock (nested parses in one thread keep the depth balanced).
_PARSE_LOCK = threading.RLock()
_IMPORT_LOCK = threading.RLock()
_PROJECT_MODULES: set[str] = set()  # top-level names loaded from a project directory

MAX_CACHED_FILES = 32
MAX_CACHED_SOURCE_BYTES = 2 * 1024 * 1024  # a syntax tree takes ~30x its source in memory


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
    statement `check_source` judges a reference by.

    The tree is shared by every caller and every thread: read it, never change it.
    `derive` keeps whatever a caller computes from the tree alongside it, so the work
    is done once per parse and dropped with it. Compared by identity: one per parse.
    """

    path: Path
    tree: ast.Module | None
    error: str = ""
    definitions: Mapping[str, ast.stmt] = field(default_factory=lambda: MappingProxyType({}))
    size: int = 0
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
    return ParsedModule(path, tree, definitions=_first_bindings(tree), size=len(source))


def _first_bindings(tree: ast.Module) -> Mapping[str, ast.stmt]:
    """Each top-level name with the first statement that defines, assigns or imports
    it: the statement a reference to that name is judged by."""
    first: dict[str, ast.stmt] = {}
    for node in tree.body:
        for name in _bound_names(node):
            first.setdefault(name, node)
    return MappingProxyType(first)


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


@dataclass(frozen=True)
class Resolution:
    """Where a reference points. `problem` is empty when it was found; `uncertain`
    says it exists but could not be verified statically (compiled module, alias).
    `module` is the parsed source the verdict was read from, and `definition` the
    `def` found in it."""

    problem: str = ""
    uncertain: str = ""
    source: Path | None = None
    module: ParsedModule | None = field(default=None, compare=False, repr=False)
    definition: ast.FunctionDef | ast.AsyncFunctionDef | None = field(
        default=None, compare=False, repr=False
    )


@dataclass(frozen=True)
class ModuleLocation:
    """Where a module named in a manifest is, judged the way trust needs it.

    `path` is the file as found (where it sits, symlinks not followed) and `target`
    the file it resolves to (where it points). `roots` are the project directories
    either of them is in: a module that sits in a project directory is project code
    wherever it points, and one that points into a project directory is project code
    wherever it sits. `problem` is set when the module cannot be used at all.
    """

    module: str
    path: Path | None = None
    target: Path | None = None
    roots: tuple[Path, ...] = ()
    problem: str = ""
    top: Path | None = None
    """Where the top-level module or package was found (as it sits)."""

    @property
    def in_project(self) -> bool:
        return bool(self.roots)


_LOCATIONS: StampedCache[ModuleLocation] = StampedCache()


def locate_module(module: str, roots: Sequence[Path]) -> ModuleLocation:
    """`_find_location`, looked up once per module and reused while the directories
    searched and the files found stat the same (`assembler.stamped`)."""
    searched = [str(r) for r in roots] + [p for p in sys.path if p]

    def find() -> tuple[ModuleLocation, list[str] | None]:
        found = _find_location(module, roots)
        return found, module_search_paths(searched, found.path, found.top, found.problem)

    return _LOCATIONS.get((module, tuple(searched), os.getcwd()), find)


def location_cache() -> StampedCache[ModuleLocation]:
    """The process-wide cache of `locate_module` (tests and benchmarks read `computed`)."""
    return _LOCATIONS


def _find_location(module: str, roots: Sequence[Path]) -> ModuleLocation:
    """Find `module` in `roots` first, then on `sys.path`, without importing anything.

    A module in a project directory that is not plain `.py` source (a `.pyc`, an
    extension module) is a problem: nothing can check what it does, so it is refused
    rather than trusted or run. (One found through `sys.path` that merely lies below
    a project directory, such as a virtual environment inside the repository, still
    needs trust, but may be compiled.)
    """
    resolved_roots = [r.resolve() for r in roots]
    search: list[str] = [str(r) for r in roots] + [p for p in sys.path if p]
    spec = None
    parts = module.split(".")
    top: Path | None = None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if depth == 1:
            spec = PathFinder.find_spec(name, search)
            if spec is not None:
                top = _spec_location(spec)
        else:
            locations = list(spec.submodule_search_locations or []) if spec else []
            spec = PathFinder.find_spec(name, locations) if locations else None
        if spec is None:
            if depth == 1 and name in sys.builtin_module_names:
                return ModuleLocation(module)
            if depth > 1:
                package = ".".join(parts[: depth - 1])
                problem = f"module `{name}` not found in package `{package}`"
            else:
                problem = (
                    f"module `{name}` not found on the manifest's path or among installed packages"
                )
            return ModuleLocation(module, problem=problem)
    assert spec is not None
    origin = spec.origin
    if not origin or origin in {"built-in", "frozen", "namespace"}:
        if spec.submodule_search_locations and not origin:
            return ModuleLocation(
                module, problem=f"`{module}` is a namespace package, not a module"
            )
        return ModuleLocation(module)
    path = Path(os.path.abspath(origin))
    target = path.resolve()
    places = [p for p in (top, path, target) if p is not None]
    resolved_places = [(place, place.resolve()) for place in places]  # once per place
    found_roots = tuple(
        dict.fromkeys(
            root
            for place, resolved in resolved_places
            for root in resolved_roots
            if _inside(place, root) or _inside(resolved, root)
        )
    )
    problem = ""
    in_a_root = top is not None and any(os.path.abspath(root) == str(top.parent) for root in roots)
    if in_a_root and path.suffix != ".py":
        problem = (
            f"`{module}` is {path.name}, not Python source: a compiled or binary module "
            "in a project directory is refused, since nothing can check what it runs"
        )
    return ModuleLocation(module, path, target, found_roots, problem, top)


def _spec_location(spec: ModuleSpec) -> Path | None:
    """The file or directory a top-level spec was found at, as it sits."""
    if spec.submodule_search_locations:
        return Path(os.path.abspath(next(iter(spec.submodule_search_locations))))
    return Path(os.path.abspath(spec.origin)) if spec.origin else None


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def find_module_source(module: str, roots: Sequence[Path]) -> tuple[Path | None, str]:
    """The source file of `module`, searching `roots` first, then `sys.path`.

    Returns (path, "") or (None, reason). A compiled or built-in module outside the
    project returns (None, "") with nothing to read.
    """
    location = locate_module(module, roots)
    if location.problem:
        return None, location.problem
    if location.path is None or location.path.suffix != ".py":
        return None, ""
    return location.path, ""


def resolve_function(reference: str, roots: Sequence[Path]) -> Resolution:
    """Check that `pkg.mod:func` names a top-level function, without importing."""
    module, _, function = reference.partition(":")
    return resolve_definition(module, function, roots, kind="function")


def resolve_definition(
    module: str,
    name: str,
    roots: Sequence[Path],
    *,
    kind: str = "function",
    allow_async: bool = True,
) -> Resolution:
    path, problem = find_module_source(module, roots)
    if problem:
        return Resolution(problem=problem)
    if path is None:
        return Resolution(
            uncertain=f"`{module}` is compiled; `{name}` cannot be checked statically"
        )
    return check_source(path, name, module, kind, allow_async=allow_async)


def check_source(
    path: Path, name: str, module: str, kind: str = "function", *, allow_async: bool = True
) -> Resolution:
    """Look in `path` (parsed once, see `parsed_module`) for a top-level `def name`
    (or `async def`, unless `allow_async` is off: an extension's `setup` is called
    without an event loop). The first statement binding the name decides."""
    parsed = parsed_module(path)
    if parsed.tree is None:
        return Resolution(problem=parsed.error, source=path)
    node = parsed.definitions.get(name)
    if node is None:
        return Resolution(problem=f"`{module}` has no top-level {kind} `{name}`", source=path)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        if isinstance(node, ast.AsyncFunctionDef) and not allow_async:
            return Resolution(
                problem=f"`{module}:{name}` must be a plain function, not `async def`",
                source=path,
            )
        return Resolution(source=path, module=parsed, definition=node)
    if isinstance(node, ast.ClassDef):
        return Resolution(problem=f"`{module}:{name}` is a class, not a {kind}", source=path)
    return Resolution(
        uncertain=f"`{module}:{name}` is assigned or imported, not defined with `def`;"
        " it cannot be checked statically",
        source=path,
    )


def import_located(location: ModuleLocation, roots: Sequence[Path]) -> ModuleType:
    """Import a module from exactly where `locate_module` found it.

    A module outside the project is imported with `sys.path` as it is: project
    directories are never put in front of the standard library or installed
    packages, so a repository's `grp.py` cannot stand in for the real one while an
    installed module imports. A project module is loaded from its own file, with
    only its own project directory appended to the end of `sys.path` while it runs
    (its siblings import; nothing it does not own is shadowed). A standard or
    installed module of that name already imported is refused, never silently reused;
    another project's module of that name is replaced.
    """
    if location.problem:
        raise ImportError(location.problem)
    if not location.in_project:
        return importlib.import_module(location.module)
    top_name = location.module.partition(".")[0]
    search = [str(root) for root in roots]
    if location.top is not None:
        search.append(str(location.top.parent))
    top_spec = PathFinder.find_spec(top_name, search)
    if top_spec is None or top_spec.loader is None:
        raise ModuleNotFoundError(f"module `{top_name}` not found", name=top_name)
    loaded = sys.modules.get(top_name)
    if loaded is not None:
        if _same_origin(loaded, top_spec):
            return importlib.import_module(location.module)
        if top_name not in _PROJECT_MODULES:
            raise ImportError(
                f"the project module `{top_name}` ({top_spec.origin}) shadows the module "
                f"`{top_name}` already imported from "
                f"{getattr(loaded, '__file__', None) or 'Python'}; rename the project module"
            )
        # Another project's module of the same name (another agent in this process, or
        # an earlier copy of a workspace): its functions keep working from their own
        # globals; the name now belongs to this one.
        for name in [n for n in sys.modules if n == top_name or n.startswith(top_name + ".")]:
            del sys.modules[name]
    home = next((str(r) for r in location.roots), None)
    with _IMPORT_LOCK:  # `sys.path` is process-wide: one project import at a time
        added = home is not None and home not in sys.path
        if added:
            sys.path.append(str(home))
        try:
            module = importlib.util.module_from_spec(top_spec)
            sys.modules[top_name] = module
            try:
                top_spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(top_name, None)
                raise
            _PROJECT_MODULES.add(top_name)
            return importlib.import_module(location.module)
        finally:
            if added:
                with suppress(ValueError):
                    sys.path.remove(str(home))


def import_module(module: str, roots: Sequence[Path]) -> ModuleType:
    """`locate_module` then `import_located`: import `module` as validation found it."""
    return import_located(locate_module(module, roots), roots)


def _same_origin(loaded: ModuleType, spec: ModuleSpec) -> bool:
    origin = getattr(loaded, "__file__", None)
    return bool(origin and spec.origin and Path(origin).resolve() == Path(spec.origin).resolve())
