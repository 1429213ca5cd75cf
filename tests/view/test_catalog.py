"""Sessions under a root: listed by file time, and named in URLs so that no name can
make the server read a file outside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.sessions.store import SessionStore
from assembler.view.catalog import Catalog


def test_listing_and_resolving(tmp_path: Path) -> None:
    root = tmp_path / "data"
    older = SessionStore(root / "sessions" / "alpha").create("alpha", None, "m")
    newer = SessionStore(root / "sessions" / "beta").create("beta", None, "m")
    os.utime(older.path, (1, 1))
    (older.path.with_name(f"{older.id}.trace.jsonl")).write_text("")
    catalog = Catalog([root])
    listed = catalog.scan()
    assert [item.path for item in listed] == [newer.path, older.path]  # traces left out
    assert [item.folder for item in listed] == ["beta", "alpha"]
    for item in listed:
        assert catalog.resolve(item.key) == item.path
        assert catalog.key_of(item.path) == item.key


@pytest.mark.parametrize(
    "key",
    [
        "0/../outside.jsonl",
        "0/sessions/../../outside.jsonl",
        "0//etc/passwd",
        "0/link/outside.jsonl",
        "0/sessions/alpha/x.trace.jsonl",
        "0/sessions/alpha/notes.txt",
        "1/sessions/alpha/x.jsonl",
        "x/sessions/alpha/x.jsonl",
        "0/sessions/alpha/x.jsonl\x00",
        "0/",
    ],
)
def test_no_name_reaches_a_file_outside_the_root(tmp_path: Path, key: str) -> None:
    root = tmp_path / "data"
    (root / "sessions" / "alpha").mkdir(parents=True)
    (root / "sessions" / "alpha" / "x.trace.jsonl").write_text("{}\n")
    (root / "sessions" / "alpha" / "notes.txt").write_text("secret\n")
    (tmp_path / "outside.jsonl").write_text('{"type":"session","version":1,"id":"o"}\n')
    (root / "link").symlink_to(tmp_path)
    assert Catalog([root]).resolve(key) is None
