"""Sessions come from one home: `SessionStore`'s named constructors (`for_agent`,
`start`, `latest`), `Session.delegate` for a sub-agent's, and the one writer of the
entries a run adds besides its messages (`run_start`, `run_end`, `subagent`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from assembler.sessions.catalog import latest_session
from assembler.sessions.records import SUFFIX
from assembler.sessions.store import Session, SessionStore


def lines(session: Session) -> list[dict[str, object]]:
    return [json.loads(line) for line in session.path.read_text("utf-8").splitlines()]


def touch(session: Session, seconds_ago: float) -> None:
    """Give the file an older write time, so orders do not depend on the clock's grain."""
    moment = time.time() - seconds_ago
    os.utime(session.path, (moment, moment))


def test_for_agent_is_the_given_directory_else_the_agents_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSEMBLER_DATA_DIR", str(tmp_path / "data"))
    assert SessionStore.for_agent("rev").directory == tmp_path / "data" / "sessions" / "rev"
    assert SessionStore.for_agent("rev", tmp_path / "mine").directory == tmp_path / "mine"


def test_start_writes_the_header_of_an_agent_run(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).start(
        agent="rev", manifest=tmp_path / "a.yaml", model="openai:gpt", workspace=tmp_path / "ws"
    )
    (header,) = lines(session)
    assert {k: header[k] for k in ("type", "agent", "manifest", "model", "workspace")} == {
        "type": "session",
        "agent": "rev",
        "manifest": str(tmp_path / "a.yaml"),
        "model": "openai:gpt",
        "workspace": str(tmp_path / "ws"),
    }
    assert "delegated_from" not in header
    assert session.trace_path == tmp_path / f"{session.id}.trace.jsonl"


def test_run_start_and_run_end_are_event_entries(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("rev", None, "m")
    start = session.append_run_start("fix it")
    end = session.append_run_end({"type": "run_end", "reason": "completed", "text": "done"})
    _, first, second = lines(session)
    assert first["event"] == {"type": "run_start", "prompt": "fix it"}
    assert first["id"] == start.id
    assert second["event"] == {"type": "run_end", "reason": "completed", "text": "done"}
    assert second["parent"] == start.id and second["id"] == end.id


def test_delegate_links_the_child_and_the_parent_both_ways(tmp_path: Path) -> None:
    parent = SessionStore(tmp_path).create("lead", None, "m")
    call_entry = parent.append("message", {"message": {"role": "user", "content": "go"}})
    child = parent.delegate(
        agent="reviewer",
        manifest=tmp_path / "reviewer.yaml",
        model="scripted:r.yaml",
        workspace=tmp_path / "review",
        call={
            "entry": call_entry.id,
            "call_id": "c1",
            "tool": "reviewer",
            "agent_path": "lead/reviewer",
        },
    )
    assert child.path.parent == parent.path.parent
    (child_header,) = lines(child)
    assert child_header["agent"] == "reviewer"
    assert child_header["workspace"] == str(tmp_path / "review")
    assert child_header["delegated_from"] == {
        "session": parent.id,
        "entry": call_entry.id,
        "call_id": "c1",
        "tool": "reviewer",
        "agent_path": "lead/reviewer",
        "session_file": str(parent.path),
    }
    link = lines(parent)[-1]
    assert link["type"] == "subagent" and link["parent"] == call_entry.id
    assert {k: link[k] for k in ("call_id", "tool", "agent_path")} == {
        "call_id": "c1",
        "tool": "reviewer",
        "agent_path": "lead/reviewer",
    }
    assert link["session"] == child.id
    assert link["session_file"] == str(child.path)
    assert link["trace_file"] == str(child.path).removesuffix(SUFFIX) + ".trace.jsonl"


def test_latest_filters_by_agent_and_workspace(tmp_path: Path) -> None:
    """What `--continue` resumes: the newest session of this agent in this workspace; a
    session naming no workspace counts as in every one."""
    store = SessionStore(tmp_path)
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    old_here = store.start(agent="rev", manifest=None, model="m", workspace=here)
    touch(old_here, 30)
    no_workspace = store.create("rev", None, "m")
    touch(no_workspace, 20)
    other_checkout = store.start(agent="rev", manifest=None, model="m", workspace=elsewhere)
    touch(other_checkout, 10)
    other_agent = store.start(agent="helper", manifest=None, model="m", workspace=here)

    def latest(**where: object) -> str | None:
        info = store.latest(**where)  # type: ignore[arg-type]
        return info.id if info is not None else None

    assert latest() == other_agent.id
    assert latest(agent="rev") == other_checkout.id
    assert latest(agent="rev", workspace=here) == no_workspace.id
    touch(no_workspace, 40)
    assert latest(agent="rev", workspace=here) == old_here.id
    assert latest(agent="nobody") is None


def test_the_latest_across_directories_is_the_newest_of_each_ones_latest(tmp_path: Path) -> None:
    """`sessions show` and `trace` without an id: one rule with `SessionStore.latest`."""
    first, second = SessionStore(tmp_path / "a"), SessionStore(tmp_path / "b")
    older = first.create("rev", None, "m")
    touch(older, 20)
    newer = second.create("lead", None, "m")
    touch(newer, 10)
    directories = [first.directory, second.directory, tmp_path / "missing"]
    found = latest_session(directories)
    assert found is not None and found.id == newer.id
    found = latest_session(directories, agent="rev")
    assert found is not None and found.id == older.id
    assert latest_session(directories, agent="nobody") is None
    assert latest_session([]) is None
