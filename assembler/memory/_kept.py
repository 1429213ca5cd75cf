"""Where a read-only open keeps the index it had to build (a fresh clone has none).

A read-only open (`render --dry-run --input`, `assemble memory list`) writes nothing
in the store, so a store without an index of its own (it is not committed: a fresh
clone) used to be indexed from its files in memory on every such open, about 24 s of
CPU at 100,000 records. Instead that index is built once in the user's cache
directory, one per store (named by the store's real path), by the read-only opens
allowed to write there (`assemble memory list` and `show`; a dry run writes nothing
anywhere), and kept: later read-only opens use it after the same checks as the
store's own index (the directory's stamp; when that differs, a scan that re-reads
only the files that changed, in place or, for a dry run, in a copy in memory). It is
a cache like the store's `.index/`: derived from the record files, rebuilt when
missing or damaged, safe to delete.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

from assembler.user_dirs import default_cache_dir

KEPT_DIR: Final = "memory-index"


def kept_index_home(root: str) -> Path:
    """The directory holding the kept index of the store whose real path is `root`."""
    digest = hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return default_cache_dir() / KEPT_DIR / digest
