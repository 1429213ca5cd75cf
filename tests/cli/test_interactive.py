"""The interactive `assemble run` on a terminal (a pseudo-terminal) and from a pipe:
steering while a tool runs, follow-ups, the slash commands, permission questions,
line editing with a history, colours, and the exit status (issues 13 and 14)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ptyrun import PtySession

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")

# Says it started (the file `started`), then waits (at most about 30 s) until the test
# creates `go` in the workspace.
WAIT_FOR_GO = (
    "touch started; for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done; echo went"
)


def wait_until_started(workspace: Path) -> None:
    """The tool is running (a steer sent before it starts skips it instead)."""
    deadline = time.monotonic() + 30  # a guard against hanging, not a timing check
    while not (workspace / "started").exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    write_manifest(tmp_path)
    return tmp_path


def write_manifest(root: Path, extra: str = "") -> Path:
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: chat\nidentity: You help.\nworkspace: work\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly, bash]}\n" + extra
    )
    return manifest


def script(root: Path, body: str) -> None:
    (root / "reply.yaml").write_text(body)


@pytest.fixture
def terminal(project: Path) -> Iterator[list[PtySession]]:
    started: list[PtySession] = []
    yield started
    for session in started:
        session.close()


def start(started: list[PtySession], project: Path, *args: str, **env: str) -> PtySession:
    session = PtySession(
        ["run", str(project / "agent.yaml"), "--trust", *args], cwd=project, env=env
    )
    started.append(session)
    session.expect("> ")
    return session


def the_session(project: Path) -> list[dict[str, object]]:
    folder = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions" / "chat"
    files = sorted(
        (p for p in folder.glob("*.jsonl") if not p.name.endswith(".trace.jsonl")),
        key=lambda p: p.stat().st_mtime,
    )
    return [json.loads(line) for line in files[-1].read_text().splitlines()]


def conversation(records: list[dict[str, object]]) -> list[tuple[str, str]]:
    """(role, text) of each message: a user's content, an assistant's text or tools."""
    out = []
    for record in records:
        if record["type"] != "message":
            continue
        message = record["message"]
        assert isinstance(message, dict)
        role = message["role"]
        if role == "assistant":
            calls = [c["name"] for c in message["tool_calls"]]
            out.append((role, message.get("text") or ",".join(calls)))
        else:
            out.append((role, str(message.get("content", ""))))
    return out


# -- steering and following up -----------------------------------------------------------


def test_a_line_typed_while_a_tool_runs_steers_the_run(
    project: Path, terminal: list[PtySession]
) -> None:
    script(
        project,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n"
        "- text: Steered answer.\n",
    )
    chat = start(terminal, project)
    chat.send("start the work")
    chat.expect("→ bash")
    wait_until_started(project / "work")
    chat.send("also look at the notes")
    chat.expect("(queued steer: also look at the notes; delivered after the running tools)")
    (project / "work" / "go").touch()
    between = chat.expect("» steer delivered: also look at the notes")
    assert "← bash ok (1 lines) went" in between
    chat.expect("Steered answer.")
    chat.expect("> ")
    chat.send("/exit")
    assert chat.wait() == 0
    assert conversation(the_session(project)) == [
        ("user", "start the work"), ("assistant", "bash"), ("tool", "went"),
        ("user", "also look at the notes"), ("assistant", "Steered answer."),
    ]  # fmt: skip


def test_a_follow_up_waits_for_the_answer(project: Path, terminal: list[PtySession]) -> None:
    script(
        project,
        f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n"
        "- text: The answer.\n- text: The follow-up answer.\n",
    )
    chat = start(terminal, project)
    chat.send("start")
    chat.expect("→ bash")
    chat.send("/followup and then summarise")
    chat.expect("(follow-up queued: delivered when the agent would stop)")
    chat.send("/compact")  # changes the conversation: not while the agent works
    chat.expect("/compact waits until the agent is idle")
    (project / "work" / "go").touch()
    chat.expect("The answer.")
    chat.expect("» follow-up delivered: and then summarise")
    chat.expect("The follow-up answer.")
    chat.expect("> ")
    chat.send("/exit")
    assert chat.wait() == 0
    assert conversation(the_session(project))[-3:] == [
        ("assistant", "The answer."), ("user", "and then summarise"),
        ("assistant", "The follow-up answer."),
    ]  # fmt: skip


# -- slash commands (from a pipe: each line waits for the one before) --------------------


def piped(project: Path, lines: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(project / "agent.yaml"), "--trust", *args],
        input=lines, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def test_an_unknown_command_is_an_error_and_never_reaches_the_model(project: Path) -> None:
    script(project, "- text: Only once.\n")
    done = piped(project, "/nope\n/compcat\n//etc is a path\n/exit\n")
    assert done.returncode == 0, done.stderr
    assert "error: unknown command /nope. /help lists the commands" in done.stderr
    assert "unknown command /compcat. Did you mean /compact?" in done.stderr
    assert conversation(the_session(project)) == [
        ("user", "/etc is a path"), ("assistant", "Only once."),
    ]  # fmt: skip


def test_compact_tree_fork_new_and_session(project: Path) -> None:
    script(
        project,
        "- text: First answer.\n- text: Second answer.\n"
        "- text: '## Goal\\nthe summary'\n- text: After the fork.\n",
    )
    done = piped(
        project,
        "first\nsecond\n/compact keep the goal\n/tree\n/session\n/fork\n1\nagain\n"
        "/new\n/session\n/exit\n",
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "compacted: 2 messages summarised, 2 kept verbatim" in err
    tree = err[err.index("/tree") if "/tree" in err else 0 :]
    assert re.search(r"\* [0-9a-f]{12} you: first\n", err)
    assert re.search(r"\* [0-9a-f]{12} ── compaction  ← here\n", err)
    assert "context: no response since the start or the last compaction" in err
    picked = re.search(r"  1\. ([0-9a-f]{12})  you: first  →  First answer\.", err)
    assert picked is not None, tree
    forked = re.search(r"forked: new session (\S+) from (\S+) at entry ([0-9a-f]{12})", err)
    assert forked is not None and forked.group(3) == picked.group(1)
    new = re.search(r"new session (\S+) \(the last one was (\S+)\)", err)
    assert new is not None and new.group(2) == forked.group(1)
    folder = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions" / "chat"
    fork_file = folder / f"{forked.group(1)}.jsonl"
    fork_records = [json.loads(line) for line in fork_file.read_text().splitlines()]
    assert fork_records[0]["parent_session"] == forked.group(2)
    assert conversation(fork_records) == [
        ("user", "first"), ("assistant", "First answer."),
        ("user", "again"), ("assistant", "After the fork."),
    ]  # fmt: skip
    sessions = [line for line in err.splitlines() if line.startswith("session 2")]
    assert sessions == [f"session {forked.group(2)}", f"session {new.group(1)}"]


def test_help_lists_built_in_and_extension_commands(project: Path) -> None:
    (project / "cmds.py").write_text(
        "def setup(api, options):\n"
        "    api.register_command('hello', lambda argument: f'hi {argument}', 'Says hi.')\n"
    )
    write_manifest(project, "extensions: [{path: cmds.py}]\n")
    script(project, "- text: unused\n")
    done = piped(project, "/help\n/hello there\n/exit\n")
    assert done.returncode == 0, done.stderr
    for usage in ("/followup TEXT", "/compact [FOCUS]", "/fork [ENTRY]", "/tree", "/new",
                  "/session", "/exit"):  # fmt: skip
        assert f"  {usage}" in done.stderr
    assert re.search(r"  /hello +Says hi\. \(extension `cmds`\)", done.stderr)
    assert done.stdout.count("hi there") == 1


def test_a_session_whose_every_turn_failed_exits_1_each_error_once(project: Path) -> None:
    script(project, "- tool_calls: [{name: read, arguments: {path: x}}]\n")  # then exhausted
    done = piped(project, "one\ntwo\n/exit\n")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2 and all("exhausted" in line for line in errors), done.stderr
    assert "run ended" not in done.stderr
    one_good = piped(project, "one\n/exit\n")
    assert one_good.returncode == 1  # the replay starts over: the same failure
    script(project, "- text: Fine.\n")
    assert piped(project, "one\ntwo\n/exit\n").returncode == 0  # one good turn is enough


# -- permission questions ------------------------------------------------------------------

ASK_ALL = "permissions:\n  default: ask\n  allow: [read]\n"


def asking(project: Path, *commands: str) -> None:
    write_manifest(project, ASK_ALL)
    steps = "".join(
        f"- tool_calls: [{{name: bash, arguments: {{command: {json.dumps(c)}}}}}]\n"
        for c in commands
    )
    script(project, steps + "- text: Done.\n")


def tool_results(project: Path) -> list[str]:
    return [
        str(r["message"]["content"])  # type: ignore[index]
        for r in the_session(project)
        if r["type"] == "message" and r["message"]["role"] == "tool"  # type: ignore[index]
    ]


def test_y_allows_once_and_a_allows_the_rule_for_the_session(
    project: Path, terminal: list[PtySession]
) -> None:
    asking(project, "echo one", "echo one", "echo one", "echo two")
    chat = start(terminal, project)
    chat.send("go")
    chat.expect("? bash: echo one")
    chat.expect("[y] allow once  [a] allow `bash(echo one)` for this session  [n] deny")
    chat.expect("allow? [y/a/N] ")
    chat.send("y")
    chat.expect("allowed once")
    chat.expect("? bash: echo one")  # once was once: asked again
    chat.send("a")
    chat.expect("allowed for this session")
    asked = chat.expect("? bash: echo two")  # the third `echo one` was not asked about
    assert asked.count("→ bash echo one") == 3 and asked.count("? bash: echo one") == 2
    chat.send("y")
    chat.expect("Done.")
    chat.expect("> ")
    chat.send("/exit")
    assert chat.wait() == 0
    assert tool_results(project) == ["one", "one", "one", "two"]


def test_n_with_a_reason_is_what_the_model_reads(project: Path, terminal: list[PtySession]) -> None:
    asking(project, "echo hi | sh")
    chat = start(terminal, project)
    chat.send("go")
    chat.expect("? bash: echo hi | sh")
    shown = chat.expect("allow? [y/N] ")  # no rule could allow this line: no `a`
    assert "[a]" not in shown.split("? bash")[-1]
    chat.send("n piping into a shell is not allowed here")
    chat.expect("denied")
    chat.expect("Done.")
    chat.send("/exit")
    assert chat.wait() == 0
    assert tool_results(project) == [
        "tool call denied by the permissions: the user refused this call: "
        "piping into a shell is not allowed here"
    ]


def test_ctrl_c_at_a_question_cancels_the_turn_not_the_session(
    project: Path, terminal: list[PtySession]
) -> None:
    asking(project, "echo never")
    chat = start(terminal, project)
    chat.send("go")
    chat.expect("allow? [y/a/N] ")
    chat.interrupt()
    chat.expect("(turn cancelled)")
    script(project, "- text: Still here.\n")  # not read again: the replay is loaded
    chat.send("/session")
    chat.expect("permissions: mode default, default ask")
    chat.send("/exit")
    assert chat.wait() == 0
    assert "never" not in tool_results(project)


# -- the terminal ----------------------------------------------------------------------------


def test_history_is_kept_and_recalled_with_the_up_arrow(
    project: Path, terminal: list[PtySession]
) -> None:
    script(project, "- text: Noted.\n")
    first = start(terminal, project)
    first.send("remember this line")
    first.expect("Noted.")
    first.send("/exit")
    assert first.wait() == 0
    history = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "history"
    assert "remember this line" in history.read_text()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600

    second = start(terminal, project)
    os.write(second.master, b"\x1b[A\x1b[A\r")  # up twice: past `/exit` to the message
    second.expect("Noted.")
    second.send("/exit")
    assert second.wait() == 0
    assert conversation(the_session(project))[0] == ("user", "remember this line")


SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_colours_on_a_terminal_and_none_with_no_color(
    project: Path, terminal: list[PtySession]
) -> None:
    script(project, "- tool_calls: [{name: read, arguments: {path: nowhere}}]\n- text: ok\n")
    for env, coloured in (({}, True), ({"NO_COLOR": "1"}, False)):
        chat = start(terminal, project, **env)
        chat.send("go")
        chat.expect("← read error")
        chat.expect("> ")
        chat.send("/exit")
        assert chat.wait() == 0
        assert bool(SGR.search(chat.raw)) is coloured, chat.raw


def test_the_end_of_input_at_a_question_refuses_it_and_every_later_one(
    project: Path, terminal: list[PtySession]
) -> None:
    asking(project, "echo one", "echo two")
    chat = start(terminal, project)
    chat.send("go")
    chat.expect("allow? [y/a/N] ")
    os.write(chat.master, b"\x04")  # Ctrl-D: the end of input
    chat.expect("(input ended: leaving after this turn; Ctrl-C stops it now)")
    chat.expect("Done.")
    assert chat.wait() == 0
    assert all(result.startswith("tool call denied") for result in tool_results(project))
    assert len(tool_results(project)) == 2


def test_resume_without_an_id_offers_a_pick_list(project: Path, terminal: list[PtySession]) -> None:
    script(project, "- text: Noted.\n")
    for prompt in ("the older one", "the newer one"):
        done = piped(project, f"{prompt}\n/exit\n")
        assert done.returncode == 0, done.stderr
    folder = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions" / "chat"
    older = next(
        p for p in folder.glob("*.jsonl")
        if not p.name.endswith(".trace.jsonl") and "the older one" in p.read_text()
    )  # fmt: skip
    os.utime(older, (older.stat().st_mtime - 60,) * 2)

    chat = PtySession(["run", str(project / "agent.yaml"), "--trust", "--resume"], cwd=project)
    terminal.append(chat)
    listed = chat.expect("Resume which session")
    assert listed.index("the newer one") < listed.index("the older one")
    chat.send("2")
    chat.expect(f"session {older.name.removesuffix('.jsonl')} (resumed, 2 messages so far)")
    chat.expect("> ")
    chat.interrupt()  # Ctrl-C at the prompt: how to leave, not a crash
    chat.expect("(Ctrl-C again, /exit or Ctrl-D to leave)")
    chat.send("and more")
    chat.expect("Noted.")
    chat.send("/exit")
    assert chat.wait() == 0
    assert "and more" in older.read_text()


def test_the_terminal_is_given_back_as_it_was(project: Path, terminal: list[PtySession]) -> None:
    """The session can end while the reading thread is inside readline (echo and line
    mode off while it edits a line): here SIGTERM in the middle of a turn."""
    import signal
    import termios

    script(project, f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n")
    chat = start(terminal, project)
    before = chat.initial_modes  # as a shell would leave them
    assert before[3] & termios.ECHO and before[3] & termios.ICANON
    chat.send("start")
    chat.expect("→ bash")
    deadline = time.monotonic() + 30  # readline takes the terminal for the next line
    while termios.tcgetattr(chat.master)[3] & termios.ECHO and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not termios.tcgetattr(chat.master)[3] & termios.ECHO
    chat.process.send_signal(signal.SIGTERM)
    assert chat.wait() == 128 + signal.SIGTERM
    assert termios.tcgetattr(chat.master) == before
