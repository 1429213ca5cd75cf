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
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Resolution:
    """Where a reference points. `problem` is empty when it was found; `uncertain`
    says it exists but could not be verified statically (compiled module, alias)."""

    problem: str = ""
    uncertain: str = ""
    source: Path | None = None


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


def locate_module(module: str, roots: Sequence[Path]) -> ModuleLocation:
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
    found_roots = tuple(
        dict.fromkeys(
            root
            for place in places
            for root in resolved_roots
            if _inside(place, root) or _inside(place.resolve(), root)
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
    """Parse `path` and look for a top-level `def name` (or `async def`, unless
    `allow_async` is off: an extension's `setup` is called without an event loop)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError) as e:
        reason = f"line {e.lineno}: {e.msg}" if isinstance(e, SyntaxError) else str(e)
        return Resolution(problem=f"cannot parse {path.name} ({reason})", source=path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            if isinstance(node, ast.AsyncFunctionDef) and not allow_async:
                return Resolution(
                    problem=f"`{module}:{name}` must be a plain function, not `async def`",
                    source=path,
                )
            return Resolution(source=path)
        if isinstance(node, ast.ClassDef) and node.name == name:
            return Resolution(problem=f"`{module}:{name}` is a class, not a {kind}", source=path)
        if _binds(node, name):
            return Resolution(
                uncertain=f"`{module}:{name}` is assigned or imported, not defined with `def`;"
                " it cannot be checked statically",
                source=path,
            )
    return Resolution(problem=f"`{module}` has no top-level {kind} `{name}`", source=path)


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    if isinstance(node, ast.ImportFrom | ast.Import):
        return any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
    return False


def import_located(location: ModuleLocation, roots: Sequence[Path]) -> ModuleType:
    """Import a module from exactly where `locate_module` found it.

    A module outside the project is imported with `sys.path` as it is: project
    directories are never put in front of the standard library or installed
    packages, so a repository's `grp.py` cannot stand in for the real one while an
    installed module imports. A project module is loaded from its own file, with
    only its own project directory appended to the end of `sys.path` while it runs
    (its siblings import; nothing it does not own is shadowed). A module of that name
    already imported from another file is refused, not silently reused.
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
        raise ImportError(
            f"the project module `{top_name}` ({top_spec.origin}) shadows the module "
            f"`{top_name}` already imported from {getattr(loaded, '__file__', None) or 'Python'}; "
            "rename the project module"
        )
    home = next((str(r) for r in location.roots), None)
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
