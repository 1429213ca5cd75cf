"""Import extensions in manifest order and run their `setup(api, options)`.

Three kinds of source: an installed module, an entry point in the group
`assembler.extensions`, or a Python file in the project. Project files are project
code: the caller (`assembler.agent.build`) checks trust before this module is asked to
load one. Every failure is an `ExtensionError` naming the extension.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from assembler.errors import AssemblerError, ExtensionError
from assembler.extensions.api import ExtensionAPI, Registrations
from assembler.manifest.model import ExtensionSpec
from assembler.python_refs import import_module

ENTRY_POINT_GROUP = "assembler.extensions"


@dataclass(frozen=True)
class LoadedExtension:
    name: str
    spec: ExtensionSpec
    registrations: Registrations


def load_extensions(
    specs: Iterable[ExtensionSpec], workspace: Path, roots: Sequence[Path] = ()
) -> list[LoadedExtension]:
    """Load each extension and run its setup, in order. `module:` extensions are
    looked up in `roots` (the project directories) before installed packages."""
    return [load_extension(spec, workspace, roots) for spec in specs]


def load_extension(
    spec: ExtensionSpec, workspace: Path, roots: Sequence[Path] = ()
) -> LoadedExtension:
    setup = _find_setup(spec, roots)
    api = ExtensionAPI(spec.name, workspace, spec.options)
    try:
        result = setup(api, dict(spec.options))
        if inspect.isawaitable(result):
            raise ExtensionError(
                f"extension `{spec.name}`: setup must be a plain function, not async"
            )
    except AssemblerError:
        raise
    except Exception as e:
        raise ExtensionError(
            f"extension `{spec.name}`: setup failed: {type(e).__name__}: {e}"
        ) from e
    finally:
        api.close()
    return LoadedExtension(spec.name, spec, api.registrations)


def _find_setup(spec: ExtensionSpec, roots: Sequence[Path]) -> Callable[..., Any]:
    module = _import(spec, roots)
    setup = getattr(module, "setup", None)
    if not callable(setup):
        raise ExtensionError(f"extension `{spec.name}` has no `setup(api, options)` function")
    return setup  # type: ignore[no-any-return]


def _import(spec: ExtensionSpec, roots: Sequence[Path]) -> ModuleType | Any:
    try:
        if spec.kind == "path":
            assert spec.path is not None
            return _import_file(spec.path)
        if spec.kind == "module":
            return import_module(spec.target, roots)
        return _entry_point(spec.target)
    except ExtensionError:
        raise
    except FileNotFoundError as e:
        raise ExtensionError(f"extension `{spec.name}`: file not found: {e.filename}") from e
    except Exception as e:
        raise ExtensionError(
            f"extension `{spec.name}` failed to import: {type(e).__name__}: {e}"
        ) from e


def _import_file(path: Path) -> ModuleType:
    """Execute a project file as a fresh module each time (a reload sees edits).

    Only `.py` source: a compiled file would run code nobody can read or check."""
    if path.suffix != ".py":
        raise ExtensionError(f"extension file {path} is not Python source (`.py`)")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    name = f"assembler_ext_{path.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ExtensionError(f"cannot load extension file {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _entry_point(name: str) -> Any:
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            loaded = entry.load()
            return loaded if inspect.ismodule(loaded) else _SetupHolder(loaded)
    raise ExtensionError(f"no `{ENTRY_POINT_GROUP}` entry point named `{name}` is installed")


class _SetupHolder:
    """An entry point may point straight at a setup function instead of a module."""

    def __init__(self, setup: Callable[..., Any]) -> None:
        self.setup = setup
