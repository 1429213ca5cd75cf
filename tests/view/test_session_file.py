"""A session file as the view indexes it: the fast path agrees with a whole parse,
bad lines are counted, branches are placed, totals and status follow the file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from assembler.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from assembler.sessions.store import SessionStore
from assembler.view.session_file import SessionFile, _slow, extract


def make(tmp_path: Path) -> tuple[SessionStore, SessionFile]:
    store = SessionStore(tmp_path / "s")
    session = store.create("agent", None, "scripted:x")
    session.append("event", {"event": {"type": "run_start", "prompt": "first question"}})
    session.append_message(UserMessage("first question"))
    call = ToolCall("c1", "read", {"path": "a.txt"})
    session.append_message(
        AssistantMessage("reading", (call,)), usage=Usage(100, 10, cache_read_tokens=40)
    )
    session.append_message(ToolResultMessage("c1", "read", "text"))
    session.append_message(UserMessage("and also this"))  # after a tool result: a steer
    session.append_message(AssistantMessage("done"), usage=Usage(200, 20))
    session.append_message(UserMessage("then summarise"))  # after an answer: a follow-up
    session.append_message(AssistantMessage("summary"), usage=Usage(300, 30))
    session.append("event", {"event": {"type": "run_end", "reason": "completed", "usage": {}}})
    return store, SessionFile(session.path)


def test_the_fast_path_reads_what_a_whole_parse_reads(tmp_path: Path) -> None:
    _, view = make(tmp_path)
    for raw in view.path.read_bytes().splitlines()[1:]:
        assert extract(raw) == _slow(raw)
    # another writer's key order, and a usage that is not the last field
    raw = json.dumps(
        {"type": "message", "time": "t", "parent": None, "id": "abc",
         "usage": {"input_tokens": 5}, "message": {"role": "assistant", "text": "x"}}
    ).encode()  # fmt: skip
    assert extract(raw).usage == {"input_tokens": 5} and extract(raw).role == "assistant"
    layout = (
        b'{"id":"a1","parent":null,"type":"message","time":"t","message":{"role":"assistant",'
        b'"text":"x","tool_calls":[{"id":"c","name":"n","arguments":{"usage":{"input_tokens":9}}}]},'
        b'"usage":{"input_tokens":7,"cost_usd":0.5},"extra":1}'
    )
    assert extract(layout).usage == {"input_tokens": 7, "cost_usd": 0.5}


def test_totals_status_and_labels(tmp_path: Path) -> None:
    _, view = make(tmp_path)
    view.refresh()
    totals = view.totals
    assert (totals.turns, totals.input_tokens, totals.output_tokens) == (3, 600, 60)
    assert totals.cache_read_tokens == 40 and totals.cost is None
    assert totals.first_prompt == "first question"
    assert view.status() == "completed"
    placed = view.order()
    kinds = [p.kind for p in placed if p.line.info.role == "user"]
    assert kinds == ["prompt", "steer", "follow-up"]
    assert [p.turn for p in placed if p.line.info.role == "assistant"] == [1, 2, 3]


def test_bad_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    _, view = make(tmp_path)
    with view.path.open("ab") as handle:
        handle.write(b'not json\n[1,2]\n{"id": 5}\n')
    view.refresh()
    assert view.totals.skipped == 3
    assert len(view.order()) == view.totals.entries == 9


def test_a_run_without_its_end_is_live_then_stopped(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session = store.create("agent", None, "scripted:x")
    session.append("event", {"event": {"type": "run_start", "prompt": "go"}})
    view = SessionFile(session.path)
    view.refresh()
    assert view.status() == "live"
    old = time.time() - 3600
    os.utime(session.path, (old, old))
    assert view.status() == "stopped"
    session.append_message(AssistantMessage("x"), usage=Usage(1, 1))
    session.append("event", {"event": {"type": "run_end", "reason": "max_turns"}})
    view.refresh()  # only the appended lines are read
    assert view.status() == "max_turns" and view.totals.turns == 1


def test_side_branches_are_nested_where_they_leave_the_main_line(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session = store.create("agent", None, "scripted:x")
    root = session.append_message(UserMessage("q"))
    first = session.append_message(AssistantMessage("first try"))
    session.append_message(UserMessage("more"), parent_id=first.id)
    retry = session.append_message(AssistantMessage("second try"), parent_id=root.id)
    last = session.append_message(UserMessage("on the main line"), parent_id=retry.id)
    view = SessionFile(session.path)
    view.refresh()
    placed = [(p.line.info.id, p.depth, p.branch_from) for p in view.order()]
    assert placed[0] == (root.id, 0, "")
    assert placed[1] == (first.id, 1, root.id)  # the side branch, at the fork point
    assert placed[2][1] == 1
    assert placed[3:] == [(retry.id, 0, ""), (last.id, 0, "")]


def test_cost_is_added_up_when_the_session_has_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session = store.create("agent", None, "scripted:x")
    session.append("message", {"message": {"role": "assistant", "text": "a"},
                               "usage": {"input_tokens": 1, "cost_usd": 0.25}})  # fmt: skip
    session.append("message", {"message": {"role": "assistant", "text": "b"},
                               "usage": {"input_tokens": 1, "cost": {"total_usd": 0.5}}})  # fmt: skip
    session.append("message", {"message": {"role": "assistant", "text": "c"},
                               "usage": {"input_tokens": "many"}})  # fmt: skip
    view = SessionFile(session.path)
    view.refresh()
    assert view.totals.cost == 0.75 and view.totals.input_tokens == 2


def test_placing_what_was_appended_agrees_with_placing_everything(tmp_path: Path) -> None:
    store, view = make(tmp_path)
    view.refresh()
    view.order()
    session = store.open(view.path)
    session.append_message(UserMessage("a live turn"))
    session.append_message(AssistantMessage("answered"), usage=Usage(1, 1))
    view.refresh()
    fresh = SessionFile(view.path)
    fresh.refresh()
    assert view.order() == fresh.order()
    assert [p.kind for p in view.order()][-2:] == ["follow-up", ""] and view.order()[-1].turn == 4
    first = view.order()[1].line.info.id
    session.append_message(UserMessage("a branch"), parent_id=first)  # not at the end
    view.refresh()
    fresh = SessionFile(view.path)
    fresh.refresh()
    assert view.order() == fresh.order()
    assert view.order()[2].branch_from == first
