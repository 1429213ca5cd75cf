"""`assemble run` and sessions: --continue, --resume, --fork, piped stdin for -p, the
JSON result, and permission asks when nobody can answer (issues 13 and 14)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import Outcome, assemble

from assembler.permissions.policy import NEEDS_APPROVAL

ANSWER = "- text: Noted.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """`agent.yaml` (agent `notes`, workspace `work`) with a replay per run."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("hello\n")
    (tmp_path / "reply.yaml").write_text(ANSWER)
    write_manifest(tmp_path / "agent.yaml", name="notes", workspace="work")
    return tmp_path


def write_manifest(path: Path, *, name: str, workspace: str, extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"version: 1\nname: {name}\nidentity: You take notes.\nworkspace: {workspace}\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly, bash]}\n" + extra
    )
    return path


def run_json(capsys: pytest.CaptureFixture[str], manifest: Path, *args: str) -> Outcome:
    return assemble(capsys, "run", str(manifest), "--trust", "--json", *args)


def final(outcome: Outcome) -> dict[str, object]:
    events = [json.loads(line) for line in outcome.out.splitlines()]
    assert events[-1]["type"] == "run_end", events
    return events[-1]


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def user_messages(path: Path) -> list[str]:
    return [
        str(r["message"]["content"])  # type: ignore[index]
        for r in records(path)
        if r["type"] == "message" and r["message"]["role"] == "user"  # type: ignore[index]
    ]


def session_file(session_id: object, agent: str = "notes") -> Path:
    data = Path(os.environ["ASSEMBLER_DATA_DIR"])
    return data / "sessions" / agent / f"{session_id}.jsonl"


def age(path: Path, seconds: float) -> None:
    """Make `path` look `seconds` old, so "the latest" does not hang on clock ticks."""
    stamp = path.stat().st_mtime - seconds
    os.utime(path, (stamp, stamp))


# -- the JSON result -------------------------------------------------------------------


def test_json_ends_with_the_session_id_and_the_runs_usage(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "reply.yaml").write_text(
        "- tool_calls: [{name: read, arguments: {path: notes.txt}}]\n"
        "  usage: {input_tokens: 100, output_tokens: 7}\n"
        "- text: It says hello.\n"
        "  usage: {input_tokens: 130, output_tokens: 5, cache_read_tokens: 90}\n"
    )
    outcome = run_json(capsys, project / "agent.yaml", "-p", "Read notes.txt")
    assert outcome.code == 0, outcome.err
    end = final(outcome)
    assert end["usage"] == {
        "input_tokens": 230, "output_tokens": 12, "cache_read_tokens": 90, "cache_write_tokens": 0,
    }  # fmt: skip
    assert session_file(end["session_id"]).is_file()
    assert user_messages(session_file(end["session_id"])) == ["Read notes.txt"]


# -- continue, resume, fork ------------------------------------------------------------------


def test_continue_picks_the_latest_session_of_this_agent_in_this_workspace(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = final(run_json(capsys, project / "agent.yaml", "-p", "first, here"))["session_id"]
    age(session_file(mine), 30)
    # the same agent in another workspace, and another agent: both newer than mine
    (project / "elsewhere").mkdir()
    other_place = write_manifest(project / "copy" / "agent.yaml", name="notes",
                                 workspace="../elsewhere")  # fmt: skip
    shutil.copy(project / "reply.yaml", project / "copy" / "reply.yaml")
    there = final(run_json(capsys, other_place, "-p", "elsewhere"))["session_id"]
    age(session_file(there), 20)
    other_agent = write_manifest(project / "other.yaml", name="other", workspace="work")
    stranger = final(run_json(capsys, other_agent, "-p", "another agent"))["session_id"]
    assert len({mine, there, stranger}) == 3

    again = run_json(capsys, project / "agent.yaml", "--continue", "-p", "second, here")
    assert again.code == 0, again.err
    assert final(again)["session_id"] == mine
    assert user_messages(session_file(mine)) == ["first, here", "second, here"]
    assert user_messages(session_file(there)) == ["elsewhere"]
    assert user_messages(session_file(stranger, "other")) == ["another agent"]

    short = run_json(capsys, project / "agent.yaml", "-c", "-p", "third")
    assert final(short)["session_id"] == mine


def test_continue_without_an_earlier_session_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_json(capsys, project / "agent.yaml", "--continue", "-p", "hi")
    assert outcome.code == 1
    assert "no earlier session of `notes`" in outcome.err
    assert "run without --continue" in outcome.err


def test_resume_takes_an_id_prefix_and_goes_on_in_that_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = final(run_json(capsys, project / "agent.yaml", "-p", "one"))["session_id"]
    final(run_json(capsys, project / "agent.yaml", "-p", "unrelated"))
    assert isinstance(first, str)
    outcome = run_json(capsys, project / "agent.yaml", "--resume", first[:-3], "-p", "two")
    assert outcome.code == 0, outcome.err
    assert final(outcome)["session_id"] == first
    assert user_messages(session_file(first)) == ["one", "two"]
    by_file = run_json(capsys, project / "agent.yaml", "-r", str(session_file(first)), "-p", "3")
    assert final(by_file)["session_id"] == first


def test_resume_of_an_unknown_id_is_one_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_json(capsys, project / "agent.yaml", "--resume", "19990101", "-p", "hi")
    assert outcome.code == 1
    assert "no session '19990101'" in outcome.err


def test_resume_without_an_id_needs_a_terminal(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    final(run_json(capsys, project / "agent.yaml", "-p", "one"))
    outcome = run_json(capsys, project / "agent.yaml", "--resume", "-p", "hi")
    assert outcome.code == 1
    assert "--resume without an ID needs a terminal" in outcome.err
    assert "assemble sessions list --agent notes" in outcome.err


def test_fork_starts_a_new_session_and_leaves_the_original_byte_for_byte(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "reply.yaml").write_text("- text: First answer.\n- text: Second answer.\n")
    first = final(run_json(capsys, project / "agent.yaml", "-p", "one"))["session_id"]
    path = session_file(first)
    again = run_json(capsys, project / "agent.yaml", "-c", "-p", "two")
    assert final(again)["session_id"] == first
    answer = next(
        r for r in records(path)
        if r["type"] == "message" and r["message"].get("text") == "First answer."  # type: ignore[index]
    )  # fmt: skip
    before = path.read_bytes()

    forked = run_json(capsys, project / "agent.yaml", "-r", str(first), "--fork",
                      str(answer["id"])[:8], "-p", "two, again")  # fmt: skip
    assert forked.code == 0, forked.err
    new_id = final(forked)["session_id"]
    assert new_id != first
    assert path.read_bytes() == before
    header = records(session_file(new_id))[0]
    assert header["parent_session"] == first and header["forked_from"] == answer["id"]
    assert user_messages(session_file(new_id)) == ["one", "two, again"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fork", "abc"], "--fork ENTRY starts from an entry of a session"),
        (["--continue", "--resume", "x"], "cannot be used together"),
        (["--continue", "--no-session"], "leave out --no-session"),
    ],
)
def test_session_options_that_do_not_go_together(
    args: list[str], message: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_json(capsys, project / "agent.yaml", *args, "-p", "hi")
    assert outcome.code == 1
    assert message in outcome.err
    assert not (Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions").exists()


# -- piped stdin ------------------------------------------------------------------------


def spawn(project: Path, *args: str, stdin: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(project / "agent.yaml"), "--trust",
         "--json", *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
        stdin=subprocess.DEVNULL if stdin is None else None,
    )  # fmt: skip


def sent_prompt(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    start = json.loads(done.stdout.splitlines()[0])
    assert start["type"] == "run_start"
    return str(start["prompt"])


def test_piped_stdin_follows_the_prompt(project: Path) -> None:
    done = spawn(project, "-p", "explain", stdin="line one\nline two\n")
    assert sent_prompt(done) == "explain\n\nline one\nline two\n"


def test_p_dash_reads_the_whole_prompt_from_stdin(project: Path) -> None:
    done = spawn(project, "-p", "-", stdin="all of it\nfrom stdin\n")
    assert sent_prompt(done) == "all of it\nfrom stdin\n"


def test_no_stdin_leaves_the_prompt_alone(project: Path) -> None:
    assert sent_prompt(spawn(project, "-p", "just this", stdin=None)) == "just this"
    assert sent_prompt(spawn(project, "-p", "just this", stdin="")) == "just this"


def test_p_dash_with_nothing_piped_is_an_error(project: Path) -> None:
    done = spawn(project, "-p", "-", stdin="  \n")
    assert done.returncode == 1
    assert "`-p -` reads the prompt from stdin, and stdin was empty" in done.stderr


def test_an_empty_prompt_is_refused_as_rpc_refuses_one(project: Path) -> None:
    for empty in ("", "  \n"):
        done = spawn(project, "-p", empty, stdin=None)
        assert done.returncode == 2
        assert "-p needs a prompt: the text was empty" in done.stderr
        assert done.stdout == ""
    # with text piped in, the piped text is the prompt (no blank lines before it)
    assert sent_prompt(spawn(project, "-p", "", stdin="from the pipe\n")) == "from the pipe\n"


def test_invalid_utf8_on_stdin_is_replaced_not_a_crash(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(project / "agent.yaml"), "--trust",
         "--json", "-p", "look"],
        input=b"ok \xff\xfe bytes\n", capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    start = json.loads(done.stdout.splitlines()[0])
    assert start["prompt"] == "look\n\nok \ufffd\ufffd bytes\n"


# -- permissions when nobody can answer -----------------------------------------------------

ASKING = """\
permissions:
  default: ask
  allow: [read]
"""


def asking_project(project: Path) -> Path:
    (project / "reply.yaml").write_text(
        "- tool_calls: [{name: bash, arguments: {command: 'echo ran > ran.txt'}}]\n- text: Done.\n"
    )
    return write_manifest(project / "agent.yaml", name="notes", workspace="work", extra=ASKING)


def tool_result(outcome: Outcome) -> dict[str, object]:
    events = [json.loads(line) for line in outcome.out.splitlines()]
    return next(e for e in events if e["type"] == "tool_result")


def test_an_ask_without_anyone_to_answer_is_a_deny_the_model_reads(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = asking_project(project)
    outcome = run_json(capsys, manifest, "-p", "run it")
    assert outcome.code == 0, outcome.err
    result = tool_result(outcome)
    assert result["executed"] is False and result["is_error"] is True
    assert NEEDS_APPROVAL in str(result["content"])
    assert not (project / "work" / "ran.txt").exists()


def test_deny_asks_mode_refuses_and_bypass_runs_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = asking_project(project)
    denied = run_json(capsys, manifest, "--permission-mode", "deny-asks", "-p", "run it")
    assert tool_result(denied)["executed"] is False
    assert not (project / "work" / "ran.txt").exists()
    assert "bypass" not in denied.err

    bypassed = run_json(capsys, manifest, "--permission-mode", "bypass", "-p", "run it")
    assert bypassed.code == 0, bypassed.err
    assert tool_result(bypassed)["executed"] is True
    assert (project / "work" / "ran.txt").read_text() == "ran\n"
    assert "permission mode: bypass" in bypassed.err  # even with --json, on stderr


def test_the_banner_names_a_mode_other_than_default(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = asking_project(project)
    outcome = assemble(capsys, "run", str(manifest), "--trust", "--permission-mode",
                       "accept-edits", "-p", "run it")  # fmt: skip
    assert "permission mode: accept-edits" in outcome.err
    assert f"✗ bash blocked by permissions: {NEEDS_APPROVAL}" in outcome.err
