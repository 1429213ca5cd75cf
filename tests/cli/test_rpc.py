"""`assemble rpc`: the same agent over JSON lines, as an editor would drive it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def rpc(shipping: Path, requests: list[dict[str, object]], script: str) -> list[dict[str, object]]:
    (shipping / "agents" / "rpc.script.yaml").write_text(script)
    process = subprocess.run(
        [
            sys.executable, "-m", "assembler", "rpc", str(shipping / "agents" / "shipping-fixer.yaml"),
            "--trust", "--no-session", "--model", "scripted:rpc.script.yaml",
        ],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    return [json.loads(line) for line in process.stdout.splitlines()]


def test_prompt_streams_events_then_the_result(shipping: Path) -> None:
    replies = rpc(
        shipping,
        [
            {"id": 1, "method": "tools"},
            {"id": 2, "method": "prompt", "params": {"text": "How are tests run?"}},
            {"id": 3, "method": "messages"},
            {"id": 4, "method": "shutdown"},
        ],
        "- tool_calls: [{name: read, arguments: {path: AGENTS.md}}]\n- text: With unittest.\n",
    )
    assert replies[0]["event"] == {"type": "ready", "agent": "shipping-fixer"}
    tools = next(r for r in replies if r.get("id") == 1)["result"]
    assert [t["name"] for t in tools] == ["read", "bash", "edit"]  # type: ignore[index]
    events = [r["event"] for r in replies if r.get("id") == 2 and "event" in r]
    assert [e["type"] for e in events][:2] == ["run_start", "turn_start"]  # type: ignore[index]
    result = next(r for r in replies if r.get("id") == 2 and "result" in r)["result"]
    assert result["reason"] == "completed" and result["text"] == "With unittest."  # type: ignore[index]
    messages = next(r for r in replies if r.get("id") == 3)["result"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]  # type: ignore[index]
    assert next(r for r in replies if r.get("id") == 4)["result"] == {"ok": True}


def test_bad_requests_get_errors_not_a_crash(shipping: Path) -> None:
    replies = rpc(
        shipping,
        [{"id": 1, "method": "nope"}, {"id": 2, "method": "prompt", "params": {}}],
        "- text: unused\n",
    )
    errors = {r["id"]: r["error"] for r in replies if "error" in r}
    assert errors[1]["type"] == "MethodNotFound"  # type: ignore[index]
    assert errors[2]["type"] == "InvalidParams"  # type: ignore[index]


def test_system_prompt_and_reload(shipping: Path) -> None:
    replies = rpc(
        shipping,
        [{"id": 1, "method": "system_prompt"}, {"id": 2, "method": "reload"}],
        "- text: unused\n",
    )
    prompt = next(r for r in replies if r.get("id") == 1)["result"]["text"]  # type: ignore[index]
    assert prompt.startswith("## identity\n")
    reloaded = next(r for r in replies if r.get("id") == 2)["result"]
    assert reloaded["skills"] == ["fix-workflow"] and reloaded["context_files"] == ["AGENTS.md"]  # type: ignore[index]
