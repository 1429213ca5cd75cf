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
import sys
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Resolution:
    """Where a reference points. `problem` is empty when it was found; `uncertain`
    says it exists but could not be verified statically (compiled module, alias)."""

    problem: str = ""
    uncertain: str = ""
    source: Path | None = None


def find_module_source(module: str, roots: Sequence[Path]) -> tuple[Path | None, str]:
    """The source file of `module`, searching `roots` first, then `sys.path`.

    Returns (path, "") or (None, reason). A compiled or built-in module returns
    (None, "") with nothing to read.
    """
    search: list[str] = [str(r) for r in roots] + [p for p in sys.path if p]
    spec = None
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if depth == 1:
            spec = PathFinder.find_spec(name, search)
        else:
            locations = list(spec.submodule_search_locations or []) if spec else []
            spec = PathFinder.find_spec(name, locations) if locations else None
        if spec is None:
            if depth == 1 and name in sys.builtin_module_names:
                return None, ""
            if depth > 1:
                package = ".".join(parts[: depth - 1])
                return None, f"module `{name}` not found in package `{package}`"
            return (
                None,
                f"module `{name}` not found on the manifest's path or among installed packages",
            )
    if spec is None:
        return None, f"module `{module}` not found"
    origin = spec.origin
    if not origin or origin in {"built-in", "frozen", "namespace"}:
        if spec.submodule_search_locations and not origin:
            return None, f"`{module}` is a namespace package, not a module"
        return None, ""
    path = Path(origin)
    return (path, "") if path.suffix == ".py" else (None, "")


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


def import_from_roots(module: str, roots: Sequence[Path]) -> ModuleType:
    """Import `module`, looking in `roots` before `sys.path`; a module already imported
    under that name is reused. Raises what the import raises."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    entries = list(dict.fromkeys(str(root) for root in roots))
    importlib.invalidate_caches()
    sys.path[:0] = entries
    try:
        return importlib.import_module(module)
    finally:
        for entry in entries:
            with suppress(ValueError):
                sys.path.remove(entry)
