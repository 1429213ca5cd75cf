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

Sources are parsed once per process, under one lock (`assembler.python_source`,
whose names are also exported here).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

from assembler.python_source import (
    MAX_CACHED_FILES,
    MAX_CACHED_SOURCE_BYTES,
    ParsedModule,
    ParsedSources,
    parse_expression,
    parse_source,
    parsed_module,
    source_cache,
)
from assembler.stamped import StampedCache, module_search_paths

__all__ = [
    "MAX_CACHED_FILES",
    "MAX_CACHED_SOURCE_BYTES",
    "ModuleLocation",
    "ParsedModule",
    "ParsedSources",
    "Resolution",
    "check_source",
    "find_module_source",
    "import_located",
    "import_module",
    "locate_module",
    "location_cache",
    "parse_expression",
    "parse_source",
    "parsed_module",
    "resolve_definition",
    "resolve_function",
    "source_cache",
]

_IMPORT_LOCK = threading.RLock()
_PROJECT_MODULES: set[str] = set()  # top-level names loaded from a project directory


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


def locate_module(module: str, roots: Sequence[Path], *, _hops: int = 0) -> ModuleLocation:
    """`_find_location`, looked up once per module and reused while the directories
    searched and the files found stat the same (`assembler.stamped`)."""
    if _hops:  # a module found through another's import: its own answer is kept
        return _find_location(module, roots, _hops=_hops)
    searched = [str(r) for r in roots] + [p for p in sys.path if p]

    def find() -> tuple[ModuleLocation, list[str] | None]:
        found = _find_location(module, roots)
        return found, module_search_paths(searched, found.path, found.top, found.problem)

    return _LOCATIONS.get((module, tuple(searched), os.getcwd()), find)


def location_cache() -> StampedCache[ModuleLocation]:
    """The process-wide cache of `locate_module` (tests and benchmarks read `computed`)."""
    return _LOCATIONS


MAX_IMPORT_HOPS = 8
"""How many imports `a.b` is followed through (`a` imports `b` from `c`, which ...):
a bound on chains and cycles of plain modules."""


def _find_location(module: str, roots: Sequence[Path], *, _hops: int = 0) -> ModuleLocation:
    """Find `module` in `roots` first, then on `sys.path`, without importing anything.

    A module in a project directory that is not plain `.py` source (a `.pyc`, an
    extension module) is a problem: nothing can check what it does, so it is refused
    rather than trusted or run. (One found through `sys.path` that merely lies below
    a project directory, such as a virtual environment inside the repository, still
    needs trust, but may be compiled.)

    Below a plain module (not a package), a name is the module that module imports
    under that name: `os.path` is the `posixpath` that `os` imports as `path`
    (`_imported_module`); importing reaches it the same way (`import_located`).
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
            if not locations and spec is not None and spec.origin and _hops < MAX_IMPORT_HOPS:
                alias = _imported_module(Path(spec.origin), parts[depth - 1], parts[: depth - 1])
                imported = locate_module(alias, roots, _hops=_hops + 1) if alias else None
                if imported is not None and not imported.problem:  # a module, not a function
                    rest = parts[depth:]
                    inner = (
                        locate_module(".".join([alias, *rest]), roots, _hops=_hops + 1)
                        if rest
                        else imported
                    )
                    return _through(module, inner, top, resolved_roots)
            spec = PathFinder.find_spec(name, locations) if locations else None
        if spec is None:
            if depth == 1 and name in sys.builtin_module_names:
                return ModuleLocation(module)
            if depth > 1 and not locations:
                parent = ".".join(parts[: depth - 1])
                why = (
                    f"imports no module as `{parts[depth - 1]}`"
                    if _hops < MAX_IMPORT_HOPS
                    else f"imports are followed at most {MAX_IMPORT_HOPS} modules deep"
                )
                problem = (
                    f"module `{name}` not found: `{parent}` is a module, not a package, and {why}"
                )
            elif depth > 1:
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


def _imported_module(source: Path, name: str, parent: list[str]) -> str:
    """The module that the plain module at `source` (named `parent`) binds to `name`
    by its first module-level import of it (`import posixpath as path`,
    `from pkg import mod as name`), or "" when it binds none that way."""
    if source.suffix != ".py":
        return ""
    parsed = parsed_module(source)
    node = parsed.definitions.get(name)
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (alias.asname or alias.name.split(".")[0]) == name:
                return alias.name if alias.asname else name
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative to the package that holds `parent`
            package = parent[: len(parent) - node.level]
            base = ".".join([*package, *([base] if base else [])])
        for alias in node.names:
            if (alias.asname or alias.name) == name and base:
                return f"{base}.{alias.name}"
    return ""


def _through(
    module: str, inner: ModuleLocation, top: Path | None, roots: Sequence[Path]
) -> ModuleLocation:
    """`module`, found as the module its parent imports (`inner`): `inner`'s file,
    with the project directories of both (the parent's code runs on import too)."""
    own = tuple(
        root
        for root in roots
        if top is not None and (_inside(top, root) or _inside(top.resolve(), root))
    )
    return replace(
        inner,
        module=module,
        roots=tuple(dict.fromkeys((*own, *inner.roots))),
        top=top if own or inner.top is None else inner.top,
    )


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
    if name in parsed.conditional:
        return Resolution(
            uncertain=f"`{module}:{name}` is bound more than once under `if`/`try`: which "
            "one it is is decided when the module runs, so it is not statically visible",
            source=path,
        )
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
        return _import_name(location.module)
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
            return _import_name(location.module)
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
            return _import_name(location.module)
        finally:
            if added:
                with suppress(ValueError):
                    sys.path.remove(str(home))


def _import_name(module: str) -> ModuleType:
    """`importlib.import_module`, or, where a parent is a plain module, the module it
    holds under that name (`pkg.tools.helpers` when `pkg.tools` imports `helpers`):
    the place `locate_module` found it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        parent, _, name = module.rpartition(".")
        if not parent or e.name != module:
            raise
        value = getattr(_import_name(parent), name, None)
        if isinstance(value, ModuleType):
            return value
        raise


def import_module(module: str, roots: Sequence[Path]) -> ModuleType:
    """`locate_module` then `import_located`: import `module` as validation found it."""
    return import_located(locate_module(module, roots), roots)


def _same_origin(loaded: ModuleType, spec: ModuleSpec) -> bool:
    origin = getattr(loaded, "__file__", None)
    return bool(origin and spec.origin and Path(origin).resolve() == Path(spec.origin).resolve())
