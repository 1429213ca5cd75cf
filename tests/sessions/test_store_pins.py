"""What the session store promises when it writes and finds entries, pinned (found by
mutation testing: `python bench/mutation.py store`, docs/testing.md).

The audit trace beside a session (`<id>.trace.jsonl`) is never taken for a session:
not when listing, not when `--resume` is given a prefix of the id. A compaction is
recorded with every field a later reader needs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assembler.errors import SessionError
from assembler.sessions.store import SessionStore


def with_trace(store: SessionStore) -> str:
    session = store.create("reviewer", None, "scripted:x", {})
    trace = session.path.with_name(f"{session.id}.trace.jsonl")
    trace.write_text('{"type":"trace"}\n', "utf-8")
    return session.id


def test_a_trace_file_is_never_listed_as_a_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    ids = {with_trace(store) for _ in range(6)}
    assert {info.id for info in store.list()} == ids


def test_an_id_prefix_opens_the_session_beside_its_trace(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session_id = with_trace(store)
    opened = store.open(session_id[:-2])
    assert opened.id == session_id
    assert opened.path.name == f"{session_id}.jsonl"


def test_a_store_that_cannot_make_its_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", "utf-8")
    store = SessionStore(tmp_path / "file" / "sessions")
    with pytest.raises(SessionError) as raised:
        store.create("reviewer", None, "scripted:x", {})
    assert str(raised.value).startswith(
        f"cannot create the session directory {tmp_path / 'file' / 'sessions'}: "
    )


def test_a_compaction_is_stored_with_every_field(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("reviewer", None, "scripted:x", {})
    first = session.append("event", {"event": {"type": "run_start", "prompt": "hi"}})
    plain = session.append_compaction("the story so far", first.id)
    full = session.append_compaction("later", None, tokens_before=1234, reason="overflow")
    lines = [json.loads(line) for line in session.path.read_bytes().splitlines()[1:]]
    stored = [
        {k: v for k, v in line.items() if k not in ("id", "parent", "time")} for line in lines
    ]
    assert stored[1:] == [
        {
            "type": "compaction",
            "summary": "the story so far",
            "first_kept": first.id,
            "tokens_before": 0,
            "reason": "",
        },
        {
            "type": "compaction",
            "summary": "later",
            "first_kept": None,
            "tokens_before": 1234,
            "reason": "overflow",
        },
    ]
    assert [line["parent"] for line in lines] == [None, first.id, plain.id]
    assert full.id == lines[-1]["id"]


def test_a_fork_of_a_bare_header_makes_up_no_agent_or_model(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"type":"session","version":1,"id":"x"}\n'
        '{"id":"e1","parent":null,"type":"note","time":"2026-11-30T09:15:00.000Z"}\n',
        "utf-8",
    )
    fork = SessionStore(tmp_path).open(path).fork("e1")
    header = json.loads(fork.path.read_bytes().split(b"\n")[0])
    assert (header["agent"], header["model"], header["manifest"]) == ("", "", None)


def test_a_path_that_is_not_a_session_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "odd.jsonl"
    folder.mkdir()
    with pytest.raises(SessionError) as raised:
        SessionStore(tmp_path).open(folder)
    assert str(raised.value) == f"no session file at {folder}"


def test_an_ambiguous_prefix_shows_five_candidates(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    ids = sorted(store.create("reviewer", None, "scripted:x", {}).id for _ in range(6))
    with pytest.raises(SessionError) as raised:
        store.open("2")
    assert str(raised.value) == (f"'2' matches 6 sessions ({', '.join(ids[:5])}...); be specific")
