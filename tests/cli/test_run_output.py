"""What `assemble run` shows: the answer on stdout, the work on stderr, failures as
events, and where requests go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble


def script(shipping: Path, body: str) -> None:
    (shipping / "agents" / "out.script.yaml").write_text(body)


def test_p_prints_only_the_final_answer_on_stdout(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script(
        shipping,
        "- text: Let me look first.\n  tool_calls: [{name: read, arguments: {path: AGENTS.md}}]\n"
        "- text: Use unittest.\n",
    )
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--model", "scripted:out.script.yaml", "-p", "How?",
    )  # fmt: skip
    assert result.code == 0
    assert result.out == "Use unittest.\n"
    assert "Let me look first." in result.err
    assert result.err.index("Let me look first.") < result.err.index("→ read")


def test_a_provider_failure_is_an_error_event_and_exit_1(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one reply that calls a tool; the follow-up request finds the replay exhausted
    script(shipping, "- tool_calls: [{name: read, arguments: {path: AGENTS.md}}]\n")
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust", "--json",
        "--model", "scripted:out.script.yaml", "-p", "hi",
    )  # fmt: skip
    assert result.code == 1
    events = [json.loads(line) for line in result.out.splitlines()]
    error = next(e for e in events if e["type"] == "error")
    assert error["error_type"] == "ProviderError" and "exhausted" in error["message"]
    assert events[-1]["type"] == "run_end" and events[-1]["reason"] == "error"
    assert events[-1]["message"] == error["message"]


def test_interactive_session_survives_a_failed_turn(shipping: Path) -> None:
    script(shipping, "- text: first answer\n")  # the second message exhausts the script
    process = subprocess.run(
        [
            sys.executable, "-m", "assembler", "run", str(shipping / "agents" / "shipping-fixer.yaml"),
            "--trust", "--json", "--model", "scripted:out.script.yaml",
        ],
        input="hello\nagain\n/exit\n", capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    events = [json.loads(line) for line in process.stdout.splitlines()]  # stdout is pure JSON
    ends = [e for e in events if e["type"] == "run_end"]
    assert [e["reason"] for e in ends] == ["completed", "error"]
    errors = [e for e in events if e["type"] == "error"]
    assert (
        errors
        and "exhausted" in errors[0]["message"]
        and errors[0]["error_type"] == "ProviderError"
    )
    assert "> " in process.stderr


def test_the_endpoint_is_shown_without_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXY_PASS", "hunter2")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: proxied\nidentity: Test.\n"
        "model:\n  provider: openai\n  name: m\n"
        "  base_url: http://user:${PROXY_PASS}@127.0.0.1:9/v1?key=${PROXY_PASS}\n"
    )
    untrusted = assemble(capsys, "run", str(manifest), "--no-session", "-p", "hi")
    assert untrusted.code == 1 and "not a trusted directory" in untrusted.err
    assert "hunter2" not in untrusted.err + untrusted.out
    result = assemble(capsys, "run", str(manifest), "--no-session", "--trust", "-p", "hi")
    assert result.code == 1
    assert "via http://127.0.0.1:9/v1" in result.err
    assert "hunter2" not in result.err and "hunter2" not in result.out
    json_result = assemble(
        capsys, "run", str(manifest), "--no-session", "--trust", "--json", "-p", "hi"
    )
    start = json.loads(json_result.out.splitlines()[0])
    assert start["type"] == "run_start" and start["endpoint"] == "http://127.0.0.1:9/v1"
    assert "hunter2" not in json_result.out + json_result.err


def test_a_failing_extension_command_does_not_end_the_session(shipping: Path) -> None:
    (shipping / "agents" / "extensions" / "cmd.py").write_text(
        "def setup(api, options):\n"
        "    def boom(argument):\n        raise RuntimeError('command broke')\n"
        "    api.register_command('boom', boom, 'Breaks.')\n"
    )
    manifest = shipping / "agents" / "shipping-fixer.yaml"
    manifest.write_text(
        manifest.read_text().replace("extensions/protect_tests.py", "extensions/cmd.py")
    )
    script(shipping, "- text: still here\n")
    process = subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(manifest), "--trust", "--model", "scripted:out.script.yaml"],
        input="/boom now\nhello\n/exit\n", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    assert "/boom (extension `cmd`) failed: RuntimeError: command broke" in process.stderr
    assert "still here" in process.stdout
