"""Session summaries for listings, and finding a session by id across agents' folders."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from assembler.errors import SessionError
from assembler.sessions.catalog import find_session, list_sessions, summarise
from assembler.sessions.records import read_info
from assembler.sessions.store import SessionStore


def user(text: str) -> dict[str, object]:
    return {"message": {"role": "user", "content": text}}


def test_a_summary_counts_entries_and_finds_the_first_user_message(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("alpha", None, "m", metadata={"workspace": "/w"})
    session.append("event", {"event": {"type": "run_start", "prompt": "x"}})
    session.append("message", {"message": {"role": "context", "content": "user memory"}})
    session.append("tool_trace", {"arguments": {"role": "user", "content": "not a message"}})
    session.append("message", user("the real question"))
    last = session.append("message", user("a later one"))
    with session.path.open("ab") as file:
        file.write(b'{"id": "torn", "par')  # a torn last line

    info = read_info(session.path)
    assert info is not None
    summary = summarise(info)
    assert summary.first_message == "the real question"
    assert summary.entries == 6  # every record after the header, the torn one included
    assert summary.last_activity == last.time  # the last complete entry
    assert summary.workspace == "/w" and summary.agent == "alpha"
    assert summary.to_dict()["first_message"] == "the real question"


def test_a_session_with_no_entries_has_an_empty_summary(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("alpha", None, "m")
    info = read_info(session.path)
    assert info is not None
    summary = summarise(info)
    assert (summary.entries, summary.first_message) == (0, "")
    assert summary.last_activity  # the file's time, not nothing


def test_listing_filters_by_agent_across_folders_newest_first(tmp_path: Path) -> None:
    lead = SessionStore(tmp_path / "lead")
    first = lead.create("lead", None, "m")
    first.append("message", user("one"))
    child = lead.create("reviewer", None, "m", metadata={"delegated_from": {"session": "x"}})
    child.append("message", user("child task"))
    other = SessionStore(tmp_path / "other").create("other", None, "m")
    other.append("message", user("three"))

    everything = list_sessions([tmp_path / "lead", tmp_path / "other"])
    assert [s.id for s in everything] == [other.id, child.id, first.id]
    reviewers = list_sessions([tmp_path / "lead", tmp_path / "other"], agent="reviewer")
    assert [s.id for s in reviewers] == [child.id]
    assert reviewers[0].delegated_from == {"session": "x"}
    assert len(list_sessions([tmp_path / "lead", tmp_path / "other"], limit=2)) == 2


def test_find_by_id_prefix_or_path_in_any_folder(tmp_path: Path) -> None:
    one = SessionStore(tmp_path / "a").create("a", None, "m")
    two = SessionStore(tmp_path / "b").create("b", None, "m")
    folders = [tmp_path / "a", tmp_path / "b"]
    assert find_session(two.id, folders).path == two.path
    assert find_session(str(one.path), folders).path == one.path
    with pytest.raises(SessionError, match="matches 2 sessions"):
        find_session(one.id[:4], folders)  # the year: both ids start with it
    with pytest.raises(SessionError, match="no session 'zzz'"):
        find_session("zzz", folders)


def test_a_tree_thousands_of_entries_deep_is_built(tmp_path: Path) -> None:
    """`Session.tree()` built its nodes recursively: 1,500 entries raised RecursionError."""
    session = SessionStore(tmp_path).create("a", None, "m")
    for number in range(1500):
        session.append("event", {"n": number})
    (root,) = session.tree()
    depth = 0
    node = root
    while node.children:
        (node,) = node.children
        depth += 1
    assert depth == 1499 and node.entry.payload == {"n": 1499}


def test_a_fork_sorts_and_shows_its_own_start(tmp_path: Path) -> None:
    """The entries a fork copies keep their times; the fork itself is newer than all of
    them, so it lists first and does not look as if it ended before it started."""
    store = SessionStore(tmp_path)
    original = store.create("alpha", None, "m")
    first = original.append("message", user("one"))
    original.append("message", user("two"))
    time.sleep(0.01)  # times have milliseconds: the fork is made in a later one
    forked = original.fork(first.id)
    summaries = {s.id: s for s in list_sessions([tmp_path])}
    fork_summary = summaries[forked.id]
    assert fork_summary.started == forked.header["created"]
    assert fork_summary.last_activity == fork_summary.started  # not the copied entry's time
    assert fork_summary.last_activity > summaries[original.id].last_activity
    assert list_sessions([tmp_path])[0].id == forked.id
    after = forked.append("message", user("three"))
    assert list_sessions([tmp_path])[0].last_activity == after.time
