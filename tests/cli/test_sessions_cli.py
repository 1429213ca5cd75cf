"""`assemble sessions list` and `assemble sessions show`: every agent's sessions, newest
first; a transcript with tool activity shortened, compactions, forks and sub-agent
links both ways; text from a session escaped on a terminal only."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble

from assembler.agent import build_agent
from assembler.sessions.store import SessionStore
from assembler.testing import ScriptedModel, text, tool_call


def data_dir() -> Path:
    return Path(os.environ["ASSEMBLER_DATA_DIR"])


def make_agent(tmp_path: Path, name: str) -> Path:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "notes.txt").write_text("line\n" * 40)
    manifest = tmp_path / f"{name}.yaml"
    manifest.write_text(
        f"version: 1\nname: {name}\nidentity: You help.\nworkspace: work\n"
        "tools: {sets: [readonly]}\n"
    )
    return manifest


def record(manifest: Path, *replies: object, prompts: tuple[str, ...] = ("Hello",)) -> str:
    """Run `prompts` through a scripted model in the default session folder; the id."""
    agent = build_agent(manifest, provider=ScriptedModel(list(replies)))

    async def go() -> None:
        async with agent:
            for prompt in prompts:
                await agent.prompt(prompt)

    asyncio.run(go())
    assert agent.session is not None
    return agent.session.id


def set_age(session_id: str, agent: str, seconds_ago: float) -> None:
    path = data_dir() / "sessions" / agent / f"{session_id}.jsonl"
    stamp = path.stat().st_mtime - seconds_ago
    os.utime(path, (stamp, stamp))


def test_list_shows_every_agent_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = record(make_agent(tmp_path, "alpha"), text("A."), prompts=("First alpha task",))
    set_age(older, "alpha", 60)
    newer = record(make_agent(tmp_path, "beta"), text("B."), prompts=("The beta task",))

    listed = assemble(capsys, "sessions", "list")
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert lines[0].startswith(f"{newer}  beta  ") and "5 entries" in lines[0]
    assert lines[2] == "    The beta task"
    assert lines[3].startswith(f"{older}  alpha  ")
    assert lines[4] == f"    {(tmp_path / 'work').resolve()}"

    only = assemble(capsys, "sessions", "list", "--agent", "alpha", "--format", "json")
    (entry,) = json.loads(only.out)
    assert entry["id"] == older and entry["agent"] == "alpha"
    assert entry["first_message"] == "First alpha task"
    assert entry["workspace"] == str((tmp_path / "work").resolve())
    assert entry["entries"] == 5  # run start, the question, the system prompt, the answer, run end
    assert entry["started"] <= entry["last_activity"]
    assert set(entry) >= {"model", "file", "started", "last_activity"}


def test_list_with_no_sessions_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "sessions", "list")
    assert outcome.code == 0 and outcome.out == ""
    assert "no sessions" in outcome.err


def test_show_is_a_readable_transcript_with_tool_activity_shortened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = make_agent(tmp_path, "alpha")
    session_id = record(
        manifest,
        tool_call("read", path="notes.txt"),
        text("It has forty lines.\nAll the same."),
        prompts=("What is in notes.txt?",),
    )
    shown = assemble(capsys, "sessions", "show", session_id[:15])
    assert shown.code == 0, shown.err
    out = shown.out
    assert out.startswith(f"session {session_id}\nagent: alpha")
    assert "What is in notes.txt?" in out
    assert "  → read notes.txt" in out
    result = next(line for line in out.splitlines() if line.startswith("  ← read ok (41 lines)"))
    assert len(result) < 220  # 40 lines of output, one short line here
    assert "It has forty lines.\nAll the same." in out  # the answer whole
    assert out.index("you [") < out.index("→ read") < out.index("← read") < out.index("forty")

    markdown = assemble(capsys, "sessions", "show", session_id, "--format", "md").out
    assert markdown.startswith(f"# Session `{session_id}`\n")
    assert "## You `" in markdown and "- → `read notes.txt`" in markdown

    data = json.loads(assemble(capsys, "sessions", "show", session_id, "--format", "json").out)
    assert data["header"]["id"] == session_id
    kinds = [e["type"] for e in data["entries"]]
    assert kinds.count("message") == 4
    assert data["branch"] == [e["id"] for e in data["entries"]]


def test_show_without_an_id_shows_the_latest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = record(make_agent(tmp_path, "alpha"), text("Old."), prompts=("old one",))
    set_age(old, "alpha", 60)
    record(make_agent(tmp_path, "alpha"), text("New."), prompts=("new one",))
    out = assemble(capsys, "sessions", "show").out
    assert "new one" in out and "old one" not in out


def test_show_of_an_unknown_session_is_one_error(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "sessions", "show", "nosuch")
    assert outcome.code == 1
    assert outcome.err == "error: no session 'nosuch' (`assemble sessions list` shows them)\n"


def test_show_marks_compactions_and_forks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = make_agent(tmp_path, "alpha")
    model = ScriptedModel([text("One."), text("Two."), text("## Goal\nthe summary"), text("3.")])
    agent = build_agent(manifest, provider=model)

    async def go() -> str:
        async with agent:
            await agent.prompt("first")
            await agent.prompt("second")
            await agent.compact("keep the goal")
            assert agent.session is not None
            answer = next(
                e for e in agent.session.entries()
                if e.type == "message" and e.payload["message"].get("text") == "One."
            )  # fmt: skip
            agent.fork(answer.id)
            await agent.prompt("third")
            return answer.id

    forked_at = asyncio.run(go())
    assert agent.session is not None
    original = agent.session.header["parent_session"]

    before = assemble(capsys, "sessions", "show", original).out
    assert "── compaction (manual, " in before and "the summary" in before
    after = assemble(capsys, "sessions", "show", agent.session.id).out
    assert f"forked from session {original} at entry {forked_at}" in after
    assert "first" in after and "third" in after and "second" not in after


def test_show_links_a_team_both_ways(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lead = shipping / "agents" / "team" / "lead.yaml"
    ran = assemble(capsys, "run", str(lead), "--trust", "-p", "Review and test.")
    assert ran.code == 0, ran.err
    listed = json.loads(assemble(capsys, "sessions", "list", "--format", "json").out)
    parent = next(s for s in listed if s["agent"] == "lead")
    reviewer = next(s for s in listed if s["agent"] == "reviewer")
    assert reviewer["delegated_from"]["session"] == parent["id"]
    assert reviewer["delegated_from"]["agent_path"] == "lead/reviewer"

    shown_parent = assemble(capsys, "sessions", "show", parent["id"]).out
    assert "↳ sub-agent lead/reviewer (tool `reviewer`, call " in shown_parent
    assert f"session {reviewer['id']}, {reviewer['file']}" in shown_parent
    shown_child = assemble(capsys, "sessions", "show", reviewer["id"]).out
    assert f"delegated from session {parent['id']} (tool `reviewer`, call " in shown_child
    assert parent["file"] in shown_child

    by_agent = json.loads(
        assemble(capsys, "sessions", "list", "--agent", "reviewer", "--format", "json").out
    )
    assert [s["id"] for s in by_agent] == [reviewer["id"]]  # found in the lead's folder


def test_session_dir_limits_the_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = SessionStore(tmp_path / "mine")
    session = store.create("alpha", None, "m")
    session.append("message", {"message": {"role": "user", "content": "kept apart"}})
    listed = assemble(capsys, "sessions", "list", "--session-dir", str(tmp_path / "mine"))
    assert session.id in listed.out and "kept apart" in listed.out
    assert assemble(capsys, "sessions", "list").err.startswith("no sessions")


HOSTILE = "before\x1b]52;c;ZXZpbA==\x07after\x1b[2J"


def hostile_session(tmp_path: Path) -> str:
    store = SessionStore(data_dir() / "sessions" / "alpha")
    session = store.create("alpha", None, "m", metadata={"workspace": str(tmp_path)})
    session.append("message", {"message": {"role": "user", "content": HOSTILE}})
    session.append("message", {"message": {"role": "assistant", "text": HOSTILE,
                                           "tool_calls": []}})  # fmt: skip
    return session.id


def on_a_terminal(*args: str) -> str:
    """`assemble ...` with stdout on a pseudo-terminal; what it printed."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", *args], stdout=slave, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    process.wait(timeout=60)
    assert process.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize(
    "args",
    [["sessions", "show"], ["sessions", "show", "--format", "md"], ["sessions", "list"]],
    ids=["show", "show md", "list"],
)
def test_a_terminal_sees_escapes_shown_never_obeyed(tmp_path: Path, args: list[str]) -> None:
    hostile_session(tmp_path)
    shown = on_a_terminal(*args)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "before\\x1b]52;c;ZXZpbA==\\x07after\\x1b[2J" in shown


def test_a_pipe_gets_the_text_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session_id = hostile_session(tmp_path)
    shown = assemble(capsys, "sessions", "show", session_id).out
    assert HOSTILE in shown
    data = json.loads(assemble(capsys, "sessions", "show", session_id, "--format", "json").out)
    assert data["entries"][0]["message"]["content"] == HOSTILE
