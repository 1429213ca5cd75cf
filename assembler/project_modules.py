"""Import a module that may live in the project, exactly where validation found it.

`assemble validate` resolves `pkg.mod` in the manifest's directory, then the
workspace, then installed packages (`assembler.validation.pyref`); importing must
search the same places in the same order, or a manifest that validates would fail
to run, or run a different module. The project directories are put in front of
`sys.path` only while the import runs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from types import ModuleType


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
