"""`assemble run`: one-shot, JSON events, sessions, interactive use, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from clirun import assemble
from procs import live_processes_with

SCRIPT = """\
- tool_calls:
    - {name: read, arguments: {path: AGENTS.md}}
- text: The tests run with unittest.
"""


def write_script(shipping: Path, body: str = SCRIPT) -> Path:
    script = shipping / "agents" / "short.script.yaml"
    script.write_text(body)
    return script


def test_one_prompt_prints_the_answer(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_script(shipping)
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "scripted:short.script.yaml", "-p", "How are tests run?",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == "The tests run with unittest.\n"
    assert "→ read AGENTS.md" in result.err
    assert "session: " in result.err


def test_json_prints_the_event_stream(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_script(shipping)
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "scripted:short.script.yaml", "--json", "-p", "How?",
    )  # fmt: skip
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert "tool_call" in kinds and "tool_result" in kinds and "usage" in kinds
    assert events[-1]["reason"] == "completed"
    assert events[-1]["text"] == "The tests run with unittest."


def test_max_turns_stops_with_exit_1(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_script(shipping, "- tool_calls: [{name: read, arguments: {path: AGENTS.md}}]\n" * 3)
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "scripted:short.script.yaml", "--max-turns", "2", "-p", "loop",
    )  # fmt: skip
    assert result.code == 1
    assert "run ended: max_turns" in result.err


def test_the_session_file_is_written_where_asked(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_script(shipping)
    sessions = shipping / "my-sessions"
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "scripted:short.script.yaml", "--session-dir", str(sessions), "-p", "How?",
    )  # fmt: skip
    assert result.code == 0
    files = sorted(p.name for p in sessions.iterdir())
    assert len(files) == 2 and files[0].endswith(".jsonl") and files[1].endswith(".trace.jsonl")
    records = [json.loads(line) for line in (sessions / files[0]).read_text().splitlines()]
    assert records[0]["type"] == "session" and records[0]["agent"] == "shipping-fixer"
    assert [r["message"]["role"] for r in records if r["type"] == "message"] == [
        "user", "assistant", "tool", "assistant",
    ]  # fmt: skip


def test_untrusted_project_without_a_terminal_is_refused(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = shipping / "marker"
    extension = shipping / "agents" / "extensions" / "protect_tests.py"
    extension.write_text(extension.read_text() + f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    result = assemble(capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "-p", "hi")
    assert result.code == 1
    assert "is not a trusted directory" in result.err
    assert "assemble trust add" in result.err and "--trust" in result.err
    assert not marker.exists()


def test_missing_api_key_names_the_variable(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "openai:gpt-4o-mini", "-p", "hi",
    )  # fmt: skip
    assert result.code == 1
    assert "OPENAI_API_KEY" in result.err


def test_unknown_provider_lists_the_known_ones(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "nosuch:model", "-p", "hi",
    )  # fmt: skip
    assert result.code == 2  # a configuration mistake: a usage error
    assert "nosuch" in result.err and "anthropic" in result.err and "openai" in result.err


def _spawn(shipping: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "assembler",
            "run",
            str(shipping / "agents" / "shipping-fixer.yaml"),
            "--trust",
            *args,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=shipping,
    )


def test_interactive_session_continues_the_conversation_and_exits(shipping: Path) -> None:
    write_script(shipping, "- text: first answer\n- text: second answer\n")
    process = _spawn(shipping, "--model", "scripted:short.script.yaml")
    out, err = process.communicate("hello\nand again\n/exit\n", timeout=60)
    assert process.returncode == 0, err
    assert "first answer" in out and "second answer" in out
    assert out.index("first answer") < out.index("second answer")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="scans /proc")
def test_ctrl_c_cancels_the_turn_not_the_session(shipping: Path) -> None:
    seconds = f"30.{uuid.uuid4().int % 10**9:09d}"  # a `sleep` no other process is running
    write_script(
        shipping,
        f"- tool_calls: [{{name: bash, arguments: {{command: sleep {seconds}}}}}]\n"
        "- text: after the cancel\n",
    )
    process = _spawn(shipping, "--model", "scripted:short.script.yaml")
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write("start the slow thing\n")
        process.stdin.flush()
        # Ctrl-C must arrive while the tool runs: wait until its `sleep` exists
        deadline = time.monotonic() + 30
        while not live_processes_with(seconds) and time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.05)
        assert live_processes_with(seconds), "the bash tool never started its command"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate("next question\n/exit\n", timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "→ bash" in err
    assert "(turn cancelled)" in err
    assert "after the cancel" in out
    assert live_processes_with(seconds) == []


def test_model_names_another_script_than_the_manifests_script_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--model scripted:<file>` replays that file, also when the manifest names its
    own with `script:` (the option belongs to the manifest's model, not another)."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "own.yaml").write_text("- text: the manifest's script\n")
    (tmp_path / "other.yaml").write_text("- text: the other script\n")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: replayed\nidentity: Replays.\nworkspace: ws\n"
        "model:\n  provider: scripted\n  script: own.yaml\n"
    )
    own = assemble(capsys, "run", str(manifest), "--trust", "--no-session", "-p", "hi")
    assert (own.code, own.out) == (0, "the manifest's script\n"), own.err
    other = assemble(
        capsys, "run", str(manifest), "--trust", "--no-session",
        "--model", "scripted:other.yaml", "-p", "hi",
    )  # fmt: skip
    assert (other.code, other.out) == (0, "the other script\n"), other.err
