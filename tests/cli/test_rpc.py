"""`assemble rpc`: the same agent over JSON lines, as an editor would drive it."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import pytest
from procs import live_processes_with
from rpcclient import RpcClient

from assembler.agent.agent import Agent
from assembler.rpc import serve


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


def test_reasoning_streams_as_its_own_events(shipping: Path) -> None:
    replies = rpc(
        shipping,
        [
            {"id": 1, "method": "prompt", "params": {"text": "Think."}},
            {"id": 2, "method": "shutdown"},
        ],
        "- reasoning: Weighing the options.\n  text: Done thinking.\n",
    )
    events = [r["event"] for r in replies if r.get("id") == 1 and "event" in r]
    thought = "".join(e["text"] for e in events if e["type"] == "reasoning_delta")  # type: ignore[index,misc]
    answer = "".join(e["text"] for e in events if e["type"] == "text_delta")  # type: ignore[index,misc]
    assert (thought, answer) == ("Weighing the options.", "Done thinking.")
    result = next(r for r in replies if r.get("id") == 1 and "result" in r)["result"]
    assert result["text"] == "Done thinking."  # type: ignore[index]


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


class Server(RpcClient):
    """`assemble rpc` on the shipping example with a replay."""

    def __init__(self, shipping: Path, script: str) -> None:
        (shipping / "agents" / "rpc.script.yaml").write_text(script)
        super().__init__(
            [
                str(shipping / "agents" / "shipping-fixer.yaml"),
                "--trust", "--no-session", "--model", "scripted:rpc.script.yaml",
            ]
        )  # fmt: skip


@pytest.fixture
def server(shipping: Path) -> Iterator[Callable[[str], Server]]:
    started: list[Server] = []

    def start(script: str) -> Server:
        started.append(Server(shipping, script))
        return started[-1]

    yield start
    for each in started:
        each.kill()


def wait_for_process(marker: str) -> None:
    for _ in range(600):  # a guard: at most about 30 s
        if live_processes_with(marker):
            return
        time.sleep(0.05)
    raise AssertionError(f"no process running {marker!r}")


def is_event(ident: int, kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get("id") == ident and r.get("event", {}).get("type") == kind


def finals(replies: list[dict[str, Any]], ident: object) -> list[dict[str, Any]]:
    return [r for r in replies if r.get("id") == ident and ("result" in r or "error" in r)]


@pytest.fixture
def sleeper() -> str:
    """A `sleep` no other test (or other run of this one) starts: 30.<pid>17 seconds."""
    return f"sleep 30.{os.getpid()}17"


def test_cancel_stops_the_running_prompt_and_its_command(
    server: Callable[[str], Server], sleeper: str
) -> None:
    rpc = server(
        f"- tool_calls: [{{name: bash, arguments: {{command: '{sleeper}'}}}}]\n"
        "- text: Still here.\n"
    )
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Wait."}})
    rpc.until(is_event(1, "tool_call"))
    wait_for_process(sleeper)
    rpc.send({"id": 2, "method": "cancel"})
    assert rpc.final(2)["result"] == {"cancelled": True}
    assert rpc.final(1)["error"]["type"] == "Cancelled"
    assert live_processes_with(sleeper) == []
    rpc.send({"id": 3, "method": "prompt", "params": {"text": "Are you there?"}})
    assert rpc.final(3)["result"]["text"] == "Still here."
    rpc.send({"id": 4, "method": "cancel"})
    assert rpc.final(4)["result"] == {"cancelled": False}
    replies = rpc.finish()
    for ident in (1, 2, 3, 4):
        assert len(finals(replies, ident)) == 1
    assert live_processes_with(sleeper) == []


def test_cancel_reaches_the_prompt_past_a_waiting_request(
    server: Callable[[str], Server], sleeper: str
) -> None:
    rpc = server(f"- tool_calls: [{{name: bash, arguments: {{command: '{sleeper}'}}}}]\n")
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Wait."}})
    rpc.until(is_event(1, "tool_call"))
    wait_for_process(sleeper)
    rpc.send({"id": 2, "method": "tools"})
    rpc.send({"id": 3, "method": "cancel"})
    assert rpc.final(3)["result"] == {"cancelled": True}
    assert rpc.final(1)["error"]["type"] == "Cancelled"
    tools = rpc.final(2)["result"]
    assert [t["name"] for t in tools] == ["read", "bash", "edit"]
    replies = rpc.finish()
    # `tools` waited for the prompt: its answer comes after the prompt's.
    assert replies.index(finals(replies, 1)[0]) < replies.index(finals(replies, 2)[0])
    assert live_processes_with(sleeper) == []


# Waits (at most about 30 s) until the test creates `go` in the workspace.
WAIT_FOR_GO = "for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done; echo went"


def test_a_prompt_sent_while_another_runs_is_answered_after_it(
    server: Callable[[str], Server], shipping: Path
) -> None:
    rpc = server(
        f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n"
        "- text: First done.\n"
        "- text: Second done.\n"
    )
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "First."}})
    rpc.until(is_event(1, "tool_call"))
    rpc.send({"id": 2, "method": "prompt", "params": {"text": "Second."}})
    rpc.send({"id": 3, "method": "messages"})
    (shipping / "examples" / "shipping" / "go").touch()
    replies = rpc.finish()
    first, second, messages = (finals(replies, i) for i in (1, 2, 3))
    assert first[0]["result"]["text"] == "First done."
    assert second[0]["result"]["text"] == "Second done."
    first_at = replies.index(first[0])
    assert all(replies.index(r) > first_at for r in replies if r.get("id") == 2)
    assert replies.index(messages[0]) > replies.index(second[0])
    assert [m["role"] for m in messages[0]["result"]] == [
        "user", "assistant", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip


def test_shutdown_waits_for_the_running_prompt(
    server: Callable[[str], Server], shipping: Path
) -> None:
    rpc = server(
        f"- tool_calls: [{{name: bash, arguments: {{command: '{WAIT_FOR_GO}'}}}}]\n- text: Done.\n"
    )
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Work."}})
    rpc.until(is_event(1, "tool_call"))
    rpc.send({"id": 2, "method": "shutdown"})
    rpc.send({"id": 3, "method": "tools"})
    assert rpc.final(3)["error"]["type"] == "ShuttingDown"
    (shipping / "examples" / "shipping" / "go").touch()
    assert rpc.final(1)["result"]["text"] == "Done."
    assert rpc.final(2)["result"] == {"ok": True}
    rpc.process.wait(timeout=60)  # the server stops without waiting for the end of input
    replies = rpc.finish()
    assert replies.index(finals(replies, 1)[0]) < replies.index(finals(replies, 2)[0])


def test_every_bad_request_gets_exactly_one_error(shipping: Path) -> None:
    requests: list[object] = [
        {"id": 1, "method": "prompt", "params": {"text": "hi", "max_turns": "5"}},
        {"id": 2, "method": "prompt", "params": {"text": "hi", "max_turns": 0}},
        {"id": 3, "method": "prompt", "params": "x"},
        {"id": 4, "method": "prompt", "params": {"text": ""}},
        {"id": 5, "method": "prompt", "params": {"text": "hi", "max_turns": True}},
        {"id": 6, "method": "prompt"},
        {"id": 7, "method": "tools", "params": [1]},
        {"id": 8, "method": "cancel", "params": 5},
        {"id": 9, "method": "nope"},
        {"id": 10},
        {"id": 11, "method": "prompt", "params": {"text": "hi", "max_turns": 3}},
        {"id": 12, "method": "prompt", "params": {"text": "again"}},  # the script is used up
    ]
    (shipping / "agents" / "rpc.script.yaml").write_text("- text: Fine.\n")
    process = subprocess.run(
        [
            sys.executable, "-m", "assembler", "rpc", str(shipping / "agents" / "shipping-fixer.yaml"),
            "--trust", "--no-session", "--model", "scripted:rpc.script.yaml",
        ],
        input="".join(json.dumps(r) + "\n" for r in requests) + "not json\n[1, 2]\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    replies = [json.loads(line) for line in process.stdout.splitlines()]
    expected = {
        **dict.fromkeys((1, 2, 3, 4, 5, 6, 7, 8), "InvalidParams"),
        9: "MethodNotFound",
        10: "InvalidRequest",
    }
    for ident, kind in expected.items():
        (only,) = finals(replies, ident)
        assert only["error"]["type"] == kind, only
        assert not [r for r in replies if r.get("id") == ident and "event" in r]
    (fine,) = finals(replies, 11)
    assert fine["result"]["text"] == "Fine."
    (used_up,) = finals(replies, 12)  # a model's failure ends the run, which is an answer
    assert used_up["result"]["reason"] == "error", used_up
    assert [r["error"]["type"] for r in finals(replies, None)] == ["ParseError", "InvalidRequest"]
    assert "Traceback" not in process.stdout


class Failing:
    """Just enough of an `Agent` whose methods fail the way a bug would."""

    name = "failing"
    messages: ClassVar[list[Any]] = []

    async def start(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    manifest = SimpleNamespace(limits=SimpleNamespace(permission_timeout=300.0))

    def set_approver(self, approver: Any, *, timeout: float | None = None) -> None:
        pass  # `serve` makes the client the approver of `ask` rules

    def system_prompt(self) -> str:
        raise RuntimeError("boom\nsecond line")

    async def stream(self, prompt: str, *, max_turns: int | None = None) -> AsyncIterator[Any]:
        raise KeyError(prompt)
        yield  # an async generator


def test_unexpected_exceptions_become_internal_errors(capsys: pytest.CaptureFixture[str]) -> None:
    requests = [
        {"id": 1, "method": "system_prompt"},
        {"id": 2, "method": "prompt", "params": {"text": "hi"}},
        {"id": 3, "method": "shutdown"},
    ]
    out = io.StringIO()
    agent = cast(Agent, Failing())
    asyncio.run(serve(agent, io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out))
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert finals(replies, 1) == [
        {"id": 1, "error": {"type": "InternalError", "message": "RuntimeError: boom second line"}}
    ]
    assert finals(replies, 2) == [
        {"id": 2, "error": {"type": "InternalError", "message": "KeyError: 'hi'"}}
    ]
    assert finals(replies, 3) == [{"id": 3, "result": {"ok": True}}]
    assert "Traceback" in capsys.readouterr().err
