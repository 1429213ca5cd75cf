"""A run killed with `kill -9` while `bash` runs resumes into a transcript the OpenAI and
Anthropic APIs accept (issue 13).

Real `assemble run` processes, a real `sleep` under the real bash tool, a real
SIGKILL, then `--resume` through the official SDKs against the loopback servers, which
refuse a tool call without its result with HTTP 400 as the real APIs do
(tests/providers/test_tool_call_history_rules.py). The resumed request carries the
system prompt of the first one byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from procs import live_processes_with
from wire.anthropic_server import AnthropicServer, ToolUseSpec
from wire.anthropic_server import stream as anthropic_stream
from wire.openai_server import OpenAIServer, ToolCallSpec
from wire.openai_server import stream as openai_stream

from assembler.sessions.context import INTERRUPTED

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the sleep in /proc"),
]


def project(tmp_path: Path, marker: str) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "first.script.yaml").write_text(
        f"- tool_calls: [{{name: bash, id: toolu_sleep, arguments: {{command: 'sleep {marker}'}}}}]\n"
    )
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: killed\nidentity: You run commands.\nworkspace: work\n"
        "model: scripted:first.script.yaml\ntools: {sets: [bash]}\n"
    )
    return manifest


def environment(server: OpenAIServer | AnthropicServer | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONUNBUFFERED"] = "1"
    if isinstance(server, OpenAIServer):
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test-key")
    elif isinstance(server, AnthropicServer):
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
    return env


def assemble(manifest: Path, *args: str, server: Any = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(manifest), "--trust",
         "--session-dir", str(manifest.parent / "sessions"), *args],
        capture_output=True, text=True, env=environment(server), timeout=120, check=False,
    )  # fmt: skip


def run_and_kill(manifest: Path, marker: str, *args: str, server: Any = None) -> str:
    """Start a run whose bash call sleeps, SIGKILL it while the sleep runs; the session id."""
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "run", str(manifest), "--trust",
         "--session-dir", str(manifest.parent / "sessions"), *args, "-p", "Sleep, please."],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(server),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60  # a guard against hanging, not a timing check
        while not live_processes_with(marker):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the bash tool never started its command"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        for pid in live_processes_with(marker):  # a SIGKILL leaves the tool's process behind
            with contextlib.suppress(ProcessLookupError):  # its supervisor may end it first
                os.kill(pid, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    (session,) = [
        p for p in (manifest.parent / "sessions").glob("*.jsonl")
        if not p.name.endswith(".trace.jsonl")
    ]  # fmt: skip
    records = [json.loads(line) for line in session.read_text().splitlines()]
    last = records[-1]
    assert last["type"] == "message" and last["message"]["tool_calls"], "killed mid-tool"
    return str(records[0]["id"])


def openai_messages(body: Any) -> list[dict[str, Any]]:
    return list(body["messages"])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_run_killed_mid_bash_resumes_on_the_same_api(
    provider: str,
    tmp_path: Path,
    openai_server: OpenAIServer,
    anthropic_server: AnthropicServer,
) -> None:
    marker = f"30.{uuid.uuid4().int % 10**9:09d}"
    manifest = project(tmp_path, marker)
    command = f'{{"command": "sleep {marker}"}}'
    server: OpenAIServer | AnthropicServer
    if provider == "openai":
        server = openai_server
        server.add(openai_stream(tool_calls=[ToolCallSpec("call_sleep", "bash", [command])]))
        server.add(openai_stream("Resumed after the interruption."))
        model = "openai:gpt-test"
    else:
        server = anthropic_server
        server.add(anthropic_stream(tool_uses=[ToolUseSpec("toolu_sleep", "bash", [command])]))
        server.add(anthropic_stream("Resumed after the interruption."))
        model = "anthropic:claude-test"

    session_id = run_and_kill(manifest, marker, "--model", model, server=server)
    resumed = assemble(manifest, "--model", model, "--resume", session_id, "-p", "Go on.",
                       server=server)  # fmt: skip

    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "Resumed after the interruption.\n"
    first, second = (request.body for request in server.requests)
    if provider == "openai":
        assert second["messages"][0] == first["messages"][0]  # the system prompt, exactly
        assert second["messages"][0]["role"] == "system"
        tool = next(m for m in second["messages"] if m["role"] == "tool")
        assert tool["tool_call_id"] == "call_sleep" and tool["content"] == INTERRUPTED
    else:
        assert second["system"] == first["system"]  # the system prompt, exactly
        results = [
            block for m in second["messages"] if isinstance(m["content"], list)
            for block in m["content"] if block.get("type") == "tool_result"
        ]  # fmt: skip
        assert [r["tool_use_id"] for r in results] == ["toolu_sleep"]
        assert INTERRUPTED in json.dumps(results[0]["content"])
    assert live_processes_with(marker) == []


def test_a_scripted_run_killed_mid_bash_resumes_through_both_apis(
    tmp_path: Path, openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    marker = f"30.{uuid.uuid4().int % 10**9:09d}"
    manifest = project(tmp_path, marker)
    session_id = run_and_kill(manifest, marker)  # the manifest's scripted model

    openai_server.add(openai_stream("OpenAI took it."))
    via_openai = assemble(manifest, "--model", "openai:gpt-test", "--resume", session_id,
                          "-p", "Go on.", server=openai_server)  # fmt: skip
    assert via_openai.returncode == 0, via_openai.stderr
    assert via_openai.stdout == "OpenAI took it.\n"

    anthropic_server.add(anthropic_stream("Anthropic took it."))
    via_anthropic = assemble(manifest, "--model", "anthropic:claude-test", "--resume",
                             session_id[:12], "-p", "And now?", server=anthropic_server)  # fmt: skip
    assert via_anthropic.returncode == 0, via_anthropic.stderr
    assert via_anthropic.stdout == "Anthropic took it.\n"

    sent_openai = openai_messages(openai_server.requests[0].body)
    assert [m["role"] for m in sent_openai] == ["system", "user", "assistant", "tool", "user"]
    assert sent_openai[3]["content"] == INTERRUPTED
    anthropic_body = anthropic_server.requests[0].body
    # one prompt, byte for byte (as cache blocks on the Anthropic wire: stable part, tail)
    system_text = "".join(block["text"] for block in anthropic_body["system"])
    assert system_text == sent_openai[0]["content"]
    texts = json.dumps(anthropic_body["messages"])
    assert "OpenAI took it." in texts and "And now?" in texts and INTERRUPTED in texts
