"""What a session file's header promises, pinned (found by mutation testing:
`python bench/mutation.py records store`, docs/testing.md).

The header's own fields say what a session is (its format, id, agent, model, when
it began, where it was forked from); metadata a caller adds can never overwrite one,
and a fork of a fork names its own origin, not its parent's.
"""

from __future__ import annotations

import json
import resource
import signal
from pathlib import Path

import pytest

from assembler.errors import SessionError
from assembler.sessions.catalog import summarise
from assembler.sessions.records import read_info
from assembler.sessions.store import SessionStore

RESERVED = (
    "type",
    "version",
    "id",
    "agent",
    "manifest",
    "model",
    "created",
    "parent_session",
    "forked_from",
)


@pytest.mark.parametrize("key", RESERVED)
def test_metadata_can_never_overwrite_a_header_field(tmp_path: Path, key: str) -> None:
    store = SessionStore(tmp_path)
    with pytest.raises(SessionError) as raised:
        store.create("reviewer", None, "scripted:x", {key: "mine", "workspace": "/w"})
    assert str(raised.value) == f"session metadata cannot use the reserved keys {key}"
    assert list(tmp_path.iterdir()) == []


def test_a_fork_of_a_fork_names_its_own_origin_and_keeps_the_metadata(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    first = store.create("reviewer", None, "scripted:x", {"workspace": "/w"})
    entry = first.append("event", {"event": {"type": "run_start", "prompt": "hi"}})
    second = first.fork(entry.id)
    third = second.fork(entry.id)
    header = json.loads(third.path.read_bytes().split(b"\n")[0])
    assert header["parent_session"] == second.id
    assert header["forked_from"] == entry.id
    assert header["workspace"] == "/w"
    assert (header["agent"], header["model"], header["version"]) == ("reviewer", "scripted:x", 1)
    assert third.path.name == f"{third.id}.jsonl"


@pytest.mark.parametrize("time", [None, 1733000000, ""], ids=["absent", "a number", "empty"])
def test_last_activity_skips_entries_with_no_readable_time(tmp_path: Path, time: object) -> None:
    """Another tool may append an entry without a time (or with a number): the
    listing's last activity is then the last time that can be read, never a guess."""
    store = SessionStore(tmp_path)
    session = store.create("reviewer", None, "scripted:x", {})
    written = session.append("event", {"event": {"type": "run_start", "prompt": "hi"}})
    record: dict[str, object] = {"id": "e2", "parent": written.id, "type": "note"}
    if time is not None:
        record["time"] = time
    with session.path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")
    summary = summarise(read_info(session.path))
    assert summary.last_activity == written.time
    assert summary.entries == 2


def test_a_session_file_replaced_by_a_directory_fails_clearly(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("reviewer", None, "scripted:x", {})
    session.path.unlink()
    session.path.mkdir()
    with pytest.raises(SessionError) as raised:
        session.append("event", {"event": {"type": "run_start", "prompt": "hi"}})
    assert str(raised.value).startswith(f"cannot open the session file {session.path}: ")


def test_a_record_the_disk_cannot_hold_fails_clearly_and_the_next_starts_afresh(
    tmp_path: Path,
) -> None:
    """A full disk (here: the file size limit) cuts a record short: the append says
    so, and once there is room again the next record starts on a line of its own, the
    torn one skipped and counted."""
    store = SessionStore(tmp_path)
    session = store.create("reviewer", None, "scripted:x", {})
    room = session.path.stat().st_size + 40
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, old_limit[1]))
        with pytest.raises(SessionError) as raised:
            session.append("event", {"event": {"type": "note", "text": "x" * 200}})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert str(raised.value).startswith(f"cannot write to the session file {session.path}: ")
    assert session.path.stat().st_size == room  # the first write did go in, torn
    after = session.append("event", {"event": {"type": "note", "text": "after"}})
    reopened = store.open(session.id)
    assert [entry.id for entry in reopened.entries()] == [after.id]
    assert reopened.skipped == 1


def test_metadata_that_is_not_json_names_the_header(tmp_path: Path) -> None:
    with pytest.raises(SessionError) as raised:
        SessionStore(tmp_path).create("reviewer", None, "scripted:x", {"tags": {1, 2}})
    assert str(raised.value).startswith("the session header cannot be stored as JSON: ")


def test_a_session_file_gone_or_unreadable_is_a_clear_error(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("reviewer", None, "scripted:x", {})
    session.path.unlink()
    with pytest.raises(SessionError) as raised:
        session.entries()
    assert str(raised.value) == f"no session file at {session.path}"
    session.path.mkdir()
    with pytest.raises(SessionError) as raised:
        session.entries()
    assert str(raised.value) == (
        f"{session.path} is not a regular file (a device, FIFO or directory)"
    )


def test_a_listing_shows_blanks_for_what_a_header_lacks(tmp_path: Path) -> None:
    """A header written by another tool may hold only what the format requires: the
    listing then shows empty fields, never made-up ones."""
    path = tmp_path / "x.jsonl"
    path.write_text('{"type":"session","version":1,"id":"x","manifest":3}\n', "utf-8")
    info = read_info(path)
    assert info is not None
    assert (info.id, info.agent, info.model, info.created) == ("x", "", "", "")
    assert info.manifest is None
    path.write_text(
        '{"type":"session","version":1,"id":"x","agent":"a","model":"m",'
        '"manifest":"agents/a.yaml","created":"2026-11-30T09:15:00.000Z"}\n',
        "utf-8",
    )
    info = read_info(path)
    assert info is not None
    assert (info.agent, info.model, info.manifest) == ("a", "m", "agents/a.yaml")
    assert info.created == "2026-11-30T09:15:00.000Z"


def test_a_new_session_has_skipped_nothing(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("reviewer", None, "scripted:x", {})
    assert session.skipped == 0
    session.append("event", {"event": {"type": "run_start", "prompt": "hi"}})
    assert (len(session.entries()), session.skipped) == (1, 0)


def test_a_payload_that_is_not_json_names_the_entry_type(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("reviewer", None, "scripted:x", {})
    with pytest.raises(SessionError) as raised:
        session.append("note", {"x": float("nan")})
    assert str(raised.value).startswith("the 'note' entry cannot be stored as JSON: ")


def test_a_session_the_disk_cannot_hold_is_not_created(tmp_path: Path) -> None:
    """Creating (or forking) writes a whole file at once: on a full disk (here: the
    file size limit) it fails clearly and leaves nothing behind, not a torn file."""
    store = SessionStore(tmp_path / "sessions")
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, old_limit[1]))
        with pytest.raises(SessionError) as raised:
            store.create("reviewer", None, "scripted:x", {"notes": "x" * 500})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert str(raised.value).startswith("cannot write the session file ")
    assert list((tmp_path / "sessions").iterdir()) == []
