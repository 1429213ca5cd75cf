"""`/model`, `/cost`, the spinner while the model thinks, and Ctrl-C while the agent
works, on a real pseudo-terminal (issue 27). The model is the scripted one, or a real
OpenAI SDK against a loopback server that holds its reply until the test says so."""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ptyrun import PtySession
from wire._server import RecordedRequest, Reply
from wire.openai_server import OpenAIServer, stream

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: chat\nidentity: You help.\nworkspace: work\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly, bash]}\n"
    )
    (tmp_path / "reply.yaml").write_text("- text: From the first.\n- text: First again.\n")
    (tmp_path / "other.yaml").write_text("- text: From the other.\n- text: Other again.\n")
    return tmp_path


@pytest.fixture
def terminal() -> Iterator[list[PtySession]]:
    started: list[PtySession] = []
    yield started
    for session in started:
        session.close()


def start(
    started: list[PtySession], project: Path, *args: str, env: dict[str, str] | None = None
) -> PtySession:
    session = PtySession(
        ["run", str(project / "agent.yaml"), "--trust", *args], cwd=project, env=env
    )
    started.append(session)
    session.expect("> ")
    return session


def session_records() -> list[dict[str, object]]:
    folder = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions" / "chat"
    (path,) = (p for p in folder.glob("*.jsonl") if not p.name.endswith(".trace.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_model_shows_switches_refuses_and_is_resumed(
    project: Path, terminal: list[PtySession]
) -> None:
    chat = start(terminal, project)
    chat.send("/model")
    chat.expect(f"model: scripted:{project / 'reply.yaml'}")  # the script's file, resolved
    chat.send("hello")
    chat.expect("From the first.")
    chat.expect("> ")  # the turn is over (a /model sent during it waits for its end)
    chat.send("/model nonsense")  # no provider: refused as --model refuses it
    chat.expect("error: ")
    chat.expect(f"the model stays scripted:{project / 'reply.yaml'}")
    chat.send("/model scripted:other.yaml")
    chat.expect("model: scripted:other.yaml from the next turn on")
    chat.send("and now")
    chat.expect("From the other.")
    chat.send("/session")
    chat.expect(f"model: scripted:{project / 'other.yaml'}")
    chat.send("/exit")
    assert chat.wait() == 0
    switches = [r for r in session_records() if r.get("type") == "model"]
    assert [r["model"] for r in switches] == ["scripted:other.yaml"]

    again = start(terminal, project, "--continue")  # goes on with the model it was left with
    again.send("/model")
    again.expect(f"model: scripted:{project / 'other.yaml'}")
    again.send("on")
    again.expect("From the other.")  # the other script (a new process starts it over)
    again.send("/exit")
    assert again.wait() == 0


def test_model_with_a_name_waits_for_the_turn_but_without_one_answers_at_once(
    project: Path, terminal: list[PtySession]
) -> None:
    wait = "touch started; for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done"
    (project / "reply.yaml").write_text(
        f"- tool_calls: [{{name: bash, arguments: {{command: '{wait}'}}}}]\n- text: Done.\n"
    )
    chat = start(terminal, project)
    chat.send("start")
    deadline = time.monotonic() + 30  # a guard against hanging, not a timing check
    while not (project / "work" / "started").exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    chat.send("/model")
    chat.expect(f"model: scripted:{project / 'reply.yaml'}")
    chat.send("/model scripted:other.yaml")
    chat.expect("/model waits until the agent is idle")
    chat.send("/cost")
    chat.expect("tokens: ")
    (project / "work" / "go").write_text("")
    chat.expect("Done.")
    chat.send("/exit")
    assert chat.wait() == 0


def slow_server(project: Path, server: OpenAIServer, *, tokens: tuple[int, int]) -> None:
    """Each reply waits for the file `go` (then removes it), so the test decides how
    long the model thinks."""

    def respond(request: RecordedRequest) -> Reply:
        go = project / "work" / "go"
        deadline = time.monotonic() + 60  # a guard against hanging
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        go.unlink(missing_ok=True)
        return stream("Hello ", "there.", usage=tokens)

    server.respond_with(respond)
    (project / "agent.yaml").write_text(
        "version: 1\nname: chat\nidentity: You help.\nworkspace: work\n"
        f"model: {{provider: openai, name: gpt-4o-mini, base_url: '{server.base_url}'}}\n"
    )


def test_cost_shows_tokens_cost_and_the_budget_left(
    project: Path, terminal: list[PtySession]
) -> None:
    with OpenAIServer() as server:
        slow_server(project, server, tokens=(120_000, 5_000))
        (project / "work" / "go").write_text("")
        chat = start(terminal, project, "--budget-usd", "1", env={"OPENAI_API_KEY": "sk-test"})
        chat.send("/cost")
        chat.expect("tokens: 0 in, 0 out; cache: 0 read, 0 written")
        chat.expect("cost: $0.0000 (openai:gpt-4o-mini)")
        chat.expect("budget of each turn:")
        chat.expect("cost_usd: $1.0000")
        chat.send("hi")
        chat.expect("Hello there.")
        chat.send("/cost")
        chat.expect("tokens: 120,000 in, 5,000 out; cache: 0 read, 0 written")
        # gpt-4o-mini: $0.15 per million in, $0.60 out
        chat.expect("cost: $0.0210 (openai:gpt-4o-mini)")
        chat.expect("budget of each turn (the last one):")
        chat.expect("cost_usd: $0.0210 of $1.0000 used, $0.9790 left")
        chat.send("/exit")
        assert chat.wait() == 0
    (end,) = [r["event"] for r in session_records() if r.get("type") == "event"
              and r["event"]["type"] == "run_end"]  # fmt: skip
    assert end["cost_usd"] == pytest.approx(0.021)


@pytest.mark.parametrize("plain", [False, True], ids=["colour", "no-colour-40-columns"])
def test_a_spinner_while_the_model_thinks_is_erased_before_the_reply(
    project: Path, terminal: list[PtySession], plain: bool
) -> None:
    with OpenAIServer() as server:
        slow_server(project, server, tokens=(10, 2))
        env = {"OPENAI_API_KEY": "sk-test", **({"NO_COLOR": "1"} if plain else {})}
        chat = PtySession(["run", str(project / "agent.yaml")], cwd=project, env=env)
        terminal.append(chat)
        if plain:
            fcntl.ioctl(chat.master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
        chat.expect("> ")
        chat.send("hi")
        chat.expect("thinking (1s)")  # the elapsed time, once a second has gone by
        (project / "work" / "go").write_text("")
        chat.expect("Hello there.")
        chat.send("/exit")
        assert chat.wait() == 0
    raw = chat.raw
    drawn = raw[raw.index("| thinking") - 1 : raw.index("Hello there.")]
    frames = re.findall(r"\r([|/\\-] thinking(?: \(\d+s\))?)", drawn)
    assert frames and all(len(frame) < 40 for frame in frames)
    last = drawn.rindex(frames[-1])
    # erased (spaces over the widest frame, back to the start) before the reply
    erase = "\r" + " " * max(len(frame) for frame in frames) + "\r"
    assert erase in drawn[last:]
    if plain:
        assert not re.search(r"\x1b\[[0-9;]*m", raw)


def test_no_spinner_with_json(project: Path, terminal: list[PtySession]) -> None:
    with OpenAIServer() as server:
        slow_server(project, server, tokens=(10, 2))
        chat = PtySession(
            ["run", str(project / "agent.yaml"), "--json"],
            cwd=project,
            env={"OPENAI_API_KEY": "sk-test"},
        )
        terminal.append(chat)
        chat.expect("> ")
        chat.send("hi")
        chat.expect('"type": "turn_start"')
        time.sleep(1.5)  # long enough for a spinner to draw (it would after 0.3 s)
        (project / "work" / "go").write_text("")
        chat.expect('"type": "run_end"')
        chat.send("/exit")
        assert chat.wait() == 0
    assert "thinking" not in chat.output


def test_ctrl_c_while_the_agent_works_cancels_the_turn_and_drops_a_typed_steer(
    project: Path, terminal: list[PtySession]
) -> None:
    wait = "touch started; for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done"
    (project / "reply.yaml").write_text(
        f"- tool_calls: [{{name: bash, arguments: {{command: '{wait}'}}}}]\n"
        "- text: After the cancel.\n"
    )
    chat = start(terminal, project)
    chat.send("start")
    deadline = time.monotonic() + 30  # a guard against hanging, not a timing check
    while not (project / "work" / "started").exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.write(chat.master, b"half a steer")
    chat.expect("half a steer")
    chat.interrupt()
    chat.expect("(turn cancelled)")
    chat.expect("> ")
    chat.send("next")
    chat.expect("After the cancel.")
    chat.send("/exit")
    assert chat.wait() == 0
    users = [
        r["message"]["content"]
        for r in session_records()
        if r.get("type") == "message" and r["message"]["role"] == "user"
    ]
    assert users == ["start", "next"]
