"""Typing at the interactive session on a real pseudo-terminal (issue 27): Tab
completion of commands and `@paths`, `@path` attaching a file, a line continued with
a backslash, a bracketed paste as one message, Ctrl-C at the prompt, and `/reload`
showing what changed in the prompt."""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ptyrun import PtySession

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "notes.txt").write_text("the fee is 5 euros\n")
    (work / "src" / "app.py").write_text("print('hi')\n")
    (work / "NOTES.md").write_text("First rule.\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: chat\nidentity: You help.\nworkspace: work\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly]}\ncontext_files: [NOTES.md]\n"
    )
    (tmp_path / "reply.yaml").write_text("- text: One.\n- text: Two.\n- text: Three.\n")
    return tmp_path


@pytest.fixture
def terminal() -> Iterator[list[PtySession]]:
    started: list[PtySession] = []
    yield started
    for session in started:
        session.close()


def start(started: list[PtySession], project: Path) -> PtySession:
    session = PtySession(["run", str(project / "agent.yaml"), "--trust"], cwd=project)
    started.append(session)
    session.expect("> ")
    return session


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30  # a guard against hanging, not a timing check
    while not condition():
        assert time.monotonic() < deadline, "waited 30 s"
        time.sleep(0.02)


def user_messages() -> list[str]:
    folder = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions" / "chat"
    (path,) = (p for p in folder.glob("*.jsonl") if not p.name.endswith(".trace.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        r["message"]["content"]
        for r in records
        if r.get("type") == "message" and r["message"]["role"] == "user"
    ]


def test_tab_completes_commands_and_paths_and_a_mention_attaches_the_file(
    project: Path, terminal: list[PtySession]
) -> None:
    chat = start(terminal, project)
    os.write(chat.master, b"/ses\t\r")  # `/session `
    chat.expect("context: no response")
    chat.expect("> ")
    os.write(chat.master, b"what is in @no\t and @sr\tap\t\r")
    chat.expect("(attached notes.txt, src/app.py)")
    chat.expect("One.")
    chat.send("/exit")
    assert chat.wait() == 0
    (message,) = user_messages()
    assert message == (
        "what is in @notes.txt and @src/app.py\n\n"
        '<context source="notes.txt">\nthe fee is 5 euros\n[notes.txt: lines 1-1 of 1]\n'
        "</context>\n\n"
        "<context source=\"src/app.py\">\nprint('hi')\n[src/app.py: lines 1-1 of 1]\n</context>"
    )


def test_a_backslash_continues_the_message_and_a_paste_is_one_message(
    project: Path, terminal: list[PtySession]
) -> None:
    chat = start(terminal, project)
    chat.send("first line\\")
    chat.expect("… ")
    chat.send("second line")
    chat.expect("One.")
    chat.expect("> ")
    os.write(chat.master, b"\x1b[200~pasted one\npasted two\x1b[201~\r")
    chat.expect("Two.")
    chat.send("/exit")
    assert chat.wait() == 0
    assert user_messages() == ["first line\nsecond line", "pasted one\npasted two"]


def test_ctrl_c_clears_the_typed_line_and_a_second_one_leaves(
    project: Path, terminal: list[PtySession]
) -> None:
    chat = start(terminal, project)
    os.write(chat.master, b"half typed")
    chat.expect("half typed")  # echoed: readline has it
    chat.interrupt()
    chat.expect("(line cleared; Ctrl-C again, /exit or Ctrl-D to leave)\n> ")
    chat.send("a new line")  # the half-typed text is gone, not prepended
    chat.expect("One.")
    chat.expect("> ")
    chat.interrupt_at_prompt()  # at the empty prompt: only a warning
    chat.expect("(Ctrl-C again, /exit or Ctrl-D to leave)\n> ")
    assert chat.process.poll() is None
    chat.interrupt_at_prompt()
    assert chat.wait() == 0
    assert user_messages() == ["a new line"]


def test_ctrl_c_after_clearing_a_line_leaves(project: Path, terminal: list[PtySession]) -> None:
    """Text typed, Ctrl-C clears it, a second Ctrl-C (the prompt now empty) leaves."""
    chat = start(terminal, project)
    os.write(chat.master, b"never sent")
    chat.expect("never sent")
    chat.interrupt()
    chat.expect("(line cleared;")
    chat.expect("> ")
    chat.interrupt_at_prompt()
    assert chat.wait() == 0
    assert "never sent" not in chat.output.split("(line cleared;")[1]


def test_reload_shows_which_sections_of_the_prompt_changed(
    project: Path, terminal: list[PtySession]
) -> None:
    chat = start(terminal, project)
    chat.send("/reload")
    chat.expect("reloaded: the system prompt is unchanged")
    (project / "work" / "NOTES.md").write_text("First rule.\nSecond rule.\n")
    chat.send("/reload")
    chat.expect("reloaded; the system prompt changed:")
    chat.expect("~ workspace: +1 line, -0 lines")
    chat.send("/exit")
    assert chat.wait() == 0


def test_a_narrow_terminal_without_colour(project: Path, terminal: list[PtySession]) -> None:
    """40 columns and `NO_COLOR`: a long typed line wraps on the screen and arrives
    whole, completion still works, and no colour is drawn."""
    chat = PtySession(
        ["run", str(project / "agent.yaml"), "--trust"], cwd=project, env={"NO_COLOR": "1"}
    )
    terminal.append(chat)
    fcntl.ioctl(chat.master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    chat.expect("> ")
    long = "a message longer than the forty columns of this terminal, typed at once"
    os.write(chat.master, f"{long} @no\t\r".encode())
    chat.expect("(attached notes.txt)")
    chat.expect("One.")
    chat.send("/exit")
    assert chat.wait() == 0
    assert not re.search(r"\x1b\[[0-9;]*m", chat.raw)
    assert user_messages()[0].startswith(f"{long} @notes.txt\n\n<context")


def test_a_paste_while_the_agent_works_is_one_steer(
    project: Path, terminal: list[PtySession]
) -> None:
    work = project / "work"
    wait_for_go = (
        "touch started; for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done; echo went"
    )
    (project / "agent.yaml").write_text(
        (project / "agent.yaml").read_text().replace("[readonly]", "[readonly, bash]")
    )
    (project / "reply.yaml").write_text(
        f"- tool_calls: [{{name: bash, arguments: {{command: '{wait_for_go}'}}}}]\n"
        "- text: Steered.\n"
    )
    chat = start(terminal, project)
    chat.send("start")
    wait_for((work / "started").exists)
    os.write(chat.master, b"\x1b[200~steer one\nsteer two\x1b[201~\r")
    chat.expect("(queued steer: steer one steer two;")
    (work / "go").write_text("")
    chat.expect("Steered.")
    chat.send("/exit")
    assert chat.wait() == 0
    assert user_messages() == ["start", "steer one\nsteer two"]
