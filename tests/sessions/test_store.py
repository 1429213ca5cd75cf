"""Session files on real disk: the tree of entries, damage tolerance, concurrency, forks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.errors import SessionError
from assembler.messages import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from assembler.runner.compaction import summary_message
from assembler.sessions.context import INTERRUPTED
from assembler.sessions.paths import default_session_dir
from assembler.sessions.records import ENTRY_KEYS, Entry
from assembler.sessions.store import Session, SessionStore
from assembler.user_dirs import default_config_dir, default_data_dir

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions" / "reviewer")


@pytest.fixture
def session(store: SessionStore) -> Session:
    return store.create("reviewer", Path("/work/agents/reviewer.yaml"), "openai:gpt-4o")


def raw_lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


# --- creating and appending -------------------------------------------------------------


def test_create_writes_only_the_header(store: SessionStore) -> None:
    session = store.create("reviewer", None, "anthropic:claude", {"workspace": "/w", "n": 1})
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", session.id)
    assert session.path == store.directory / f"{session.id}.jsonl"
    data = session.path.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    header = json.loads(data)
    assert header == dict(session.header)
    assert header["type"] == "session" and header["version"] == 1
    assert header["agent"] == "reviewer" and header["model"] == "anthropic:claude"
    assert header["manifest"] is None and header["workspace"] == "/w" and header["n"] == 1
    assert TIME.match(header["created"])
    assert "parent_session" not in header
    assert session.leaf is None and session.entries() == []


def test_metadata_cannot_overwrite_header_fields(store: SessionStore) -> None:
    with pytest.raises(SessionError, match="reserved keys id"):
        store.create("a", None, "m", {"id": "mine"})


def test_append_writes_one_compact_line_per_entry(session: Session) -> None:
    first = session.append("event", {"kind": "turn_start", "text": "é\u2028"})
    second = session.append("event", {"kind": "turn_end"}, fsync=True)
    assert first.parent is None and second.parent == first.id
    assert session.leaf == second.id
    assert re.fullmatch(r"[0-9a-f]{12}", first.id) and first.id != second.id
    assert TIME.match(first.time)

    lines = raw_lines(session.path)
    assert len(lines) == 4 and lines[-1] == b""
    assert (
        lines[1]
        == (
            f'{{"id":"{first.id}","parent":null,"type":"event","time":"{first.time}",'
            '"kind":"turn_start","text":"é\u2028"}'
        ).encode()
    )
    assert session.entries() == [first, second]
    assert session.skipped == 0


def test_payloads_may_not_use_the_entry_keys(session: Session) -> None:
    for key in sorted(ENTRY_KEYS):
        with pytest.raises(SessionError, match="reserved"):
            session.append("event", {key: "x"})
    with pytest.raises(SessionError, match="not a valid entry type"):
        session.append("session", {})
    assert session.entries() == []


@pytest.mark.parametrize("payload", [{"x": {1, 2}}, {"x": float("nan")}, {"x": object()}])
def test_a_payload_that_is_not_json_is_refused_and_nothing_is_written(
    session: Session, payload: dict[str, Any]
) -> None:
    before = session.path.read_bytes()
    with pytest.raises(SessionError, match="cannot be stored as JSON"):
        session.append("event", payload)
    assert session.path.read_bytes() == before
    assert session.leaf is None


def test_appending_to_a_deleted_file_fails_clearly(session: Session) -> None:
    session.path.unlink()
    with pytest.raises(SessionError, match="no longer exists"):
        session.append("event", {})


def test_append_message_records_the_message_and_usage(session: Session) -> None:
    entry = session.append_message(AssistantMessage("hi"), usage=Usage(10, 2))
    assert entry.type == "message"
    assert entry.payload == {
        "message": {"role": "assistant", "text": "hi", "tool_calls": []},
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }


# --- the tree -----------------------------------------------------------------------------


def test_messages_follow_the_parent_chain_of_each_branch(session: Session) -> None:
    call = ToolCall("c1", "read", {"path": "a.py"})
    question = session.append_message(UserMessage("what is in a.py?"))
    session.append("event", {"kind": "turn_start"})
    asked = session.append_message(AssistantMessage("", (call,)))
    session.append("tool_trace", {"tool": "read", "ok": True})
    result = session.append_message(ToolResultMessage("c1", "read", "print(1)"))
    answer = session.append_message(AssistantMessage("It prints 1."))

    # Steer from the question: a second child of `question`.
    retry = session.append_message(AssistantMessage("Let me check."), parent_id=question.id)
    assert retry.parent == question.id
    followup = session.append_message(UserMessage("and b.py?"))
    assert followup.parent == retry.id and session.leaf == followup.id

    main_path = [
        UserMessage("what is in a.py?"),
        AssistantMessage("", (call,)),
        ToolResultMessage("c1", "read", "print(1)"),
        AssistantMessage("It prints 1."),
    ]
    assert session.messages(answer.id) == main_path
    assert session.messages(result.id) == main_path[:3]
    assert session.messages() == [
        UserMessage("what is in a.py?"),
        AssistantMessage("Let me check."),
        UserMessage("and b.py?"),
    ]
    assert [e.type for e in session.branch(answer.id)] == [
        "message",
        "event",
        "message",
        "tool_trace",
        "message",
        "message",
    ]
    assert session.branch(asked.id)[-1] == asked

    # Reopening finds the same tree; the leaf is the last entry written.
    reopened = Session.load(session.path)
    assert reopened.leaf == followup.id
    assert reopened.messages(answer.id) == main_path


def test_a_new_root_and_unknown_leaves(session: Session) -> None:
    session.append_message(UserMessage("one"))
    other = session.append_message(UserMessage("two"), parent_id=None)
    assert other.parent is None
    assert session.messages() == [UserMessage("two")]
    with pytest.raises(SessionError, match="has no entry 'nope'"):
        session.messages("nope")


def test_an_empty_session_has_no_messages(session: Session) -> None:
    assert session.messages() == [] and session.branch() == []


def test_a_malformed_message_entry_names_the_entry(session: Session) -> None:
    entry = session.append("message", {"message": {"role": "robot"}})
    with pytest.raises(SessionError, match=f"entry {entry.id}: unknown message role"):
        session.messages()


def _write_lines(path: Path, header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]), encoding="utf-8")


def _entry(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    message = {"role": "user", "content": text}
    return {"id": entry_id, "parent": parent, "type": "message", "time": "", "message": message}


def test_a_lost_parent_starts_the_path_after_the_gap(session: Session) -> None:
    _write_lines(
        session.path, dict(session.header), [_entry("b", "a-was-lost", "b"), _entry("c", "b", "c")]
    )
    assert Session.load(session.path).messages() == [UserMessage("b"), UserMessage("c")]


def test_a_parent_cycle_is_an_error_not_a_hang(session: Session) -> None:
    _write_lines(session.path, dict(session.header), [_entry("a", "b", "a"), _entry("b", "a", "b")])
    with pytest.raises(SessionError, match="cycle"):
        Session.load(session.path).messages()


# --- damage -------------------------------------------------------------------------------


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_fresh(session: Session) -> None:
    kept = session.append_message(UserMessage("kept"))
    whole = Entry("deadbeef0000", kept.id, "message", "t", {"message": {"role": "user"}})
    line = json.dumps(whole.to_record()).encode()
    with session.path.open("ab") as file:
        file.write(line[: len(line) // 2])  # a writer died mid-line

    reopened = Session.load(session.path)
    assert reopened.skipped == 1
    assert reopened.entries() == [kept] and reopened.skipped == 1
    assert reopened.leaf == kept.id

    after = reopened.append_message(UserMessage("after the crash"))
    assert after.parent == kept.id
    assert reopened.entries() == [kept, after]
    assert reopened.skipped == 1  # still counted, never removed
    assert reopened.messages() == [UserMessage("kept"), UserMessage("after the crash")]
    lines = raw_lines(session.path)
    assert lines[2] == line[: len(line) // 2]  # the fragment is still there, on its own line
    assert json.loads(lines[3])["id"] == after.id


def test_a_complete_last_line_missing_only_its_newline_is_kept(session: Session) -> None:
    first = session.append("event", {"n": 1})
    session.path.write_bytes(session.path.read_bytes().rstrip(b"\n"))
    assert session.entries() == [first] and session.skipped == 0
    second = session.append("event", {"n": 2})
    assert session.entries() == [first, second] and session.skipped == 0


@pytest.mark.parametrize(
    "bad",
    [
        b'{"id": "x", "parent": null, "type": "eve',  # torn in the middle of the file
        b"\xff\xfe\x00\x01garbage\x9c\x80",  # binary
        b"\x00\x00\x00{",
        b'["id", "type"]',  # JSON, but not an object
        b'{"parent": null, "type": "event"}',  # no id
        b'{"id": "x", "parent": null}',  # no type
        b'{"id": "x", "parent": 7, "type": "event"}',  # a parent that is not an id
        b'{"id": 7, "parent": null, "type": "event"}',
        b"NaN",
    ],
)
def test_a_corrupt_middle_line_is_skipped_and_counted(session: Session, bad: bytes) -> None:
    first = session.append("event", {"n": 1})
    with session.path.open("ab") as file:
        file.write(bad + b"\n")
    second = session.append("event", {"n": 2})
    before = session.path.read_bytes()

    assert session.entries() == [first, second]
    assert session.skipped == 1
    assert Session.load(session.path).skipped == 1
    assert session.branch() == [first, second]  # the chain passes over the bad line
    assert session.path.read_bytes() == before  # reading never changes the file


def test_blank_lines_are_ignored(session: Session) -> None:
    with session.path.open("ab") as file:
        file.write(b"\n  \r\n")
    entry = session.append("event", {})
    assert session.entries() == [entry] and session.skipped == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "does not start with a session header"),
        (b"garbage\n", "its first line is not JSON"),
        (b'{"id": "x", "type": "event"}\n', "not a header"),
        (b'{"type": "session", "version": "1", "id": "x"}\n', "no valid 'version'"),
        (b'{"type": "session", "version": 2, "id": "x"}\n', "uses session format 2"),
        (b'{"type": "session", "version": 1}\n', "no session 'id'"),
    ],
)
def test_a_file_without_a_valid_header_is_refused_not_dropped(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionError, match=re.escape(message)):
        SessionStore(tmp_path).open(path)
    assert path.read_bytes() == content


# --- concurrency --------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from assembler.sessions.store import Session

    path, tag, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    session = Session.load(path)
    (go.parent / f"ready-{tag}").touch()
    while not go.exists():
        time.sleep(0.001)
    for n in range(500):
        session.append("event", {"writer": tag, "n": n, "pad": tag * (n % 7 * 700)})
    """
)


def test_two_processes_appending_lose_nothing_and_never_interleave(
    session: Session, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(session.path), tag, str(go)])
        for tag in ("a", "b")
    ]
    deadline = time.monotonic() + 60  # both must have loaded the session before either writes
    while not all((tmp_path / f"ready-{tag}").exists() for tag in ("a", "b")):
        assert time.monotonic() < deadline, "writers did not start"
        time.sleep(0.01)
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=120) == 0

    lines = raw_lines(session.path)
    assert lines[-1] == b"" and len(lines) == 1 + 1000 + 1
    for line in lines[1:-1]:
        json.loads(line)  # every line is one whole record
    entries = session.entries()
    assert session.skipped == 0 and len(entries) == 1000
    assert len({entry.id for entry in entries}) == 1000
    for tag in ("a", "b"):
        mine = [entry for entry in entries if entry.payload["writer"] == tag]
        assert [entry.payload["n"] for entry in mine] == list(range(500))
        assert all(entry.payload["pad"] == tag * (n % 7 * 700) for n, entry in enumerate(mine))
        # Each writer continued its own chain from its own leaf.
        assert [entry.parent for entry in mine] == [None] + [entry.id for entry in mine[:-1]]


# --- fork and rewrite ---------------------------------------------------------------------


def test_fork_copies_exactly_the_path_to_the_entry(session: Session, tmp_path: Path) -> None:
    question = session.append_message(UserMessage("q"))
    session.append("event", {"kind": "x"})
    answer = session.append_message(AssistantMessage("a1"))
    session.append_message(UserMessage("more"))
    session.append_message(AssistantMessage("a2"), parent_id=question.id)  # another branch
    before = session.path.read_bytes()

    fork = session.fork(answer.id)
    assert fork.id != session.id and fork.path.parent == session.path.parent
    assert fork.header["parent_session"] == session.id
    assert fork.header["forked_from"] == answer.id
    assert fork.header["agent"] == "reviewer" and fork.header["model"] == "openai:gpt-4o"
    assert fork.header["manifest"] == "/work/agents/reviewer.yaml"
    assert fork.entries() == session.branch(answer.id)
    assert [entry.type for entry in fork.entries()] == ["message", "event", "message"]
    assert fork.leaf == answer.id
    assert fork.messages() == [UserMessage("q"), AssistantMessage("a1")]
    assert session.path.read_bytes() == before

    more = fork.append_message(UserMessage("continue in the fork"))
    assert more.parent == answer.id
    assert Session.load(fork.path).messages()[-1] == UserMessage("continue in the fork")

    elsewhere = SessionStore(tmp_path / "other")
    copied = session.fork(question.id, elsewhere)
    assert copied.path.parent == elsewhere.directory
    assert copied.messages() == [UserMessage("q")]
    assert not list(elsewhere.directory.glob("*.tmp"))


def test_fork_of_an_unknown_entry_fails(session: Session) -> None:
    with pytest.raises(SessionError, match="no entry"):
        session.fork("missing")


def test_compaction_adds_a_record_and_the_context_starts_from_the_summary(
    session: Session,
) -> None:
    session.append_message(UserMessage("first question"))
    session.append_message(AssistantMessage("first answer"))
    kept = session.append_message(UserMessage("second question"))
    session.append_message(AssistantMessage("second answer"))
    before = session.path.read_bytes()

    compaction = session.append_compaction("They asked twice.", kept.id, tokens_before=1234)
    assert session.path.read_bytes().startswith(before)  # appended, nothing rewritten
    context = session.context()
    assert context.messages == (
        summary_message("They asked twice."),
        UserMessage("second question"),
        AssistantMessage("second answer"),
    )
    assert context.entry_ids[0] == compaction.id and context.entry_ids[1] == kept.id
    session.append_message(UserMessage("third"))
    assert Session.load(session.path).messages()[-1] == UserMessage("third")
    assert len(Session.load(session.path).messages()) == 4


def test_a_tool_call_without_a_result_is_answered_as_interrupted(session: Session) -> None:
    call = ToolCall("c1", "bash", {"command": "sleep 100"})
    done = ToolCall("c0", "read", {"path": "a"})
    session.append_message(UserMessage("go"))
    session.append_message(AssistantMessage("", (done, call)))
    session.append_message(ToolResultMessage("c0", "read", "text"))
    context = session.context()
    assert context.messages[-2:] == (
        ToolResultMessage("c0", "read", "text"),
        ToolResultMessage("c1", "bash", INTERRUPTED, is_error=True),
    )
    assert context.repaired == ("c1",) and context.entry_ids[-1] == ""


def test_the_tree_shows_every_branch(session: Session) -> None:
    root = session.append_message(UserMessage("q"))
    first = session.append_message(AssistantMessage("a1"))
    second = session.append_message(AssistantMessage("a2"), parent_id=root.id)
    (node,) = session.tree()
    assert node.entry == root
    assert [child.entry for child in node.children] == [first, second]
    assert all(child.children == () for child in node.children)


# --- finding sessions ---------------------------------------------------------------------


def test_list_and_latest_order_by_last_write(store: SessionStore) -> None:
    assert store.list() == [] and store.latest() is None  # the directory does not exist yet
    sessions = [store.create("reviewer", None, f"m{n}") for n in range(3)]
    now = time.time()
    for age, session in zip((30, 10, 20), sessions, strict=True):
        os.utime(session.path, (now - age, now - age))
    (store.directory / "notes.txt").write_text("not a session")
    (store.directory / "broken.jsonl").write_bytes(b"\x00garbage\n")

    infos = store.list()
    assert [info.id for info in infos] == [sessions[1].id, sessions[2].id, sessions[0].id]
    assert store.latest() == infos[0]
    info = infos[0]
    assert info.path == sessions[1].path and info.model == "m1" and info.agent == "reviewer"
    assert info.manifest is None and info.parent_session is None
    assert info.created == sessions[1].header["created"]

    fork = sessions[0].fork(sessions[0].append("event", {}).id)
    latest = store.latest()
    assert latest is not None and latest.id == fork.id
    assert latest.parent_session == sessions[0].id


def test_open_by_id_prefix_or_path(store: SessionStore, tmp_path: Path) -> None:
    session = store.create("reviewer", None, "m")
    entry = session.append("event", {})
    for key in (session.id, session.id[:-3], session.path, str(session.path)):
        opened = store.open(key)
        assert opened.id == session.id and opened.leaf == entry.id
    store.create("reviewer", None, "m")
    with pytest.raises(SessionError, match="matches 2 sessions"):
        store.open(session.id[:4])  # the year both ids start with
    with pytest.raises(SessionError, match="no session 'zzz'"):
        store.open("zzz")
    with pytest.raises(SessionError, match="no session file"):
        store.open(tmp_path / "missing.jsonl")


# --- default directories ------------------------------------------------------------------


def test_default_dirs_honour_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("ASSEMBLER_DATA_DIR", "ASSEMBLER_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "home"
    assert default_data_dir() == home / ".local" / "share" / "agent-assembler"
    assert default_config_dir() == home / ".config" / "agent-assembler"
    assert default_session_dir("reviewer") == (
        home / ".local" / "share" / "agent-assembler" / "sessions" / "reviewer"
    )

    monkeypatch.setenv("XDG_DATA_HOME", "relative/is/ignored")
    assert default_data_dir() == home / ".local" / "share" / "agent-assembler"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    assert default_data_dir() == tmp_path / "xdg-data" / "agent-assembler"
    assert default_config_dir() == tmp_path / "xdg-config" / "agent-assembler"

    monkeypatch.setenv("ASSEMBLER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ASSEMBLER_CONFIG_DIR", str(tmp_path / "config"))
    assert default_data_dir() == tmp_path / "data"
    assert default_config_dir() == tmp_path / "config"
    assert default_session_dir("a.b-c") == tmp_path / "data" / "sessions" / "a.b-c"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b"])
def test_an_agent_name_that_is_not_a_directory_name_is_refused(name: str) -> None:
    with pytest.raises(SessionError, match="cannot be used as a directory name"):
        default_session_dir(name)


# --- arbitrary payloads -------------------------------------------------------------------

tricky_text = st.text(
    alphabet=st.characters(exclude_categories=())  # includes lone surrogates
    | st.sampled_from(["\n", "\r", "\u2028", "\u2029", "\x00", "\x85", '"', "\\", "é", "🙂"])
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky_text, inner, max_size=4),
    max_leaves=10,
)
payloads = st.dictionaries(
    tricky_text.filter(lambda key: key not in ENTRY_KEYS), json_values, max_size=5
)


@settings(max_examples=60, deadline=None)
@given(st.lists(payloads, min_size=1, max_size=5))
def test_arbitrary_payloads_read_back_unchanged(
    tmp_path_factory: pytest.TempPathFactory, batch: list[dict[str, Any]]
) -> None:
    store = SessionStore(tmp_path_factory.mktemp("hypothesis"))
    session = store.create("reviewer", None, "m", {"note": "\u2028\n"})
    written = [session.append("event", payload) for payload in batch]

    reopened = store.open(session.id)
    entries = reopened.entries()
    assert reopened.skipped == 0
    assert [entry.payload for entry in entries] == batch
    assert entries == written
    assert reopened.header["note"] == "\u2028\n"
    assert len(raw_lines(session.path)) == len(batch) + 2  # one line each, plus the header
