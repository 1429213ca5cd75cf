"""Issue 20, item 20: opening a memory store deletes only what the store itself wrote.

An earlier version kept its index in `index.json`, and opening a store deleted any file
of that name: a store pointed at a directory that also holds the user's files (the
project root, a notes folder) lost the user's `index.json`. Any `.tmp-*` name went the
same way, taken for a writer's leftover. Now only an index in the old format (its first
bytes say so, a regular file) and temporary files named exactly as the store names them
are removed; everything else is left alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from assembler.memory import MemoryStore, make_record

USERS_INDEX = json.dumps({"pages": ["intro.html", "usage.html"]}) + "\n"
LEGACY_INDEX = (
    '{"format": "assembler-memory-index", "version": 1,\n"records": [\n],\n"invalid": [\n]}\n'
)


def user_files(store: Path) -> dict[str, str]:
    files = {
        "index.json": USERS_INDEX,
        ".tmp-notes.txt": "my scratch notes\n",
        ".tmp-build": "keep me\n",
        ".tmp-report.md.deadbeef-not-hex": "keep me too\n",
    }
    store.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (store / name).write_text(text)
    return files


def test_a_users_index_json_and_tmp_files_survive_opening_and_writing(tmp_path: Path) -> None:
    store = tmp_path / "project"
    files = user_files(store)
    opened = MemoryStore.open(store)
    opened.add(make_record("deploy-day", "When deploys happen", "project", "Tuesdays."))
    opened.close()
    MemoryStore.open(store).close()
    for name, text in files.items():
        assert (store / name).read_text() == text, name


def test_a_link_named_index_json_is_left_alone(tmp_path: Path) -> None:
    store = tmp_path / "project"
    store.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text(LEGACY_INDEX)
    os.symlink(target, store / "index.json")
    MemoryStore.open(store).close()
    assert (store / "index.json").is_symlink() and target.read_text() == LEGACY_INDEX


def test_the_old_index_and_a_dead_writers_temporary_file_are_removed(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    store.mkdir()
    (store / "index.json").write_text(LEGACY_INDEX)
    (store / ".tmp-deploy-day.md.0a1b2c3d").write_text("half a record")
    (store / ".tmp-.journal.json.ffffffff").write_text("{")
    MemoryStore.open(store).close()
    assert sorted(
        p.name for p in store.iterdir() if not p.name.startswith((".index", ".lock"))
    ) == [".gitignore"]
