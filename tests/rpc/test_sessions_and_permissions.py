"""`assemble rpc` with sessions and permissions (issues 13 and 14), as a client drives a
real server process: permission requests approved, refused and never answered; a steer
while a slow tool runs; follow-ups, compaction, forks, switching and listing sessions;
`state` at any time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from rpcclient import RpcClient

from assembler.agent.agent import Agent
from assembler.permissions.policy import NEEDS_APPROVAL
from assembler.rpc import IMMEDIATE, RpcServer

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


ASKING = "permissions:\n  default: ask\n  allow: [read]\n"


def write_project(root: Path, script: str, extra: str = "") -> Path:
    (root / "work").mkdir(exist_ok=True)
    (root / "reply.yaml").write_text(script)
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: served\nidentity: You help.\nworkspace: work\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly, bash]}\n" + extra
    )
    return manifest


def bash(*commands: str) -> str:
    return "".join(
        f"- tool_calls: [{{name: bash, arguments: {{command: {json.dumps(c)}}}}}]\n"
        for c in commands
    )


Start = Callable[..., RpcClient]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    started: list[RpcClient] = []

    def run(script: str, *args: str, extra: str = "") -> RpcClient:
        manifest = write_project(tmp_path, script, extra)
        # the replays call tools: the test's own code, trusted
        client = RpcClient([str(manifest), "--trust", *args], cwd=tmp_path)
        started.append(client)
        client.until(lambda r: r.get("event", {}).get("type") == "ready")
        return client

    yield run
    for client in started:
        client.kill()


def events(client: RpcClient, ident: Any, kind: str) -> list[dict[str, Any]]:
    return [
        r["event"]
        for r in client.replies
        if r.get("id") == ident and r.get("event", {}).get("type") == kind
    ]


def is_event(ident: Any, kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get("id") == ident and r.get("event", {}).get("type") == kind


# -- permissions ---------------------------------------------------------------------------


def test_an_approving_client(start: Start, tmp_path: Path) -> None:
    rpc = start(bash("echo approved", "echo approved") + "- text: Done.\n", extra=ASKING)
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Run it."}})
    asked = rpc.until(is_event(1, "permission_request"))["event"]
    assert asked["tool"] == "bash" and asked["arguments"] == {"command": "echo approved"}
    assert asked["rules"] == ["bash(echo approved)"]
    assert asked["reason"] == "no rule matches; the default is ask"
    state = rpc.call(2, "state")["result"]
    assert state["status"] == "streaming"
    assert state["permission_requests"] == [asked["request_id"]]
    reply = rpc.call(3, "permission_reply", request_id=asked["request_id"], choice="session")
    assert reply == {"id": 3, "result": {"ok": True}}
    assert rpc.final(1)["result"]["reason"] == "completed"
    assert len(events(rpc, 1, "permission_request")) == 1  # the rule held for the second
    results = events(rpc, 1, "tool_result")
    assert [(r["executed"], r["content"]) for r in results] == [(True, "approved")] * 2
    again = rpc.call(4, "permission_reply", request_id=asked["request_id"], choice="once")
    assert again["error"]["type"] == "InvalidParams"
    assert "no permission request" in again["error"]["message"]


def test_a_refusing_client(start: Start, tmp_path: Path) -> None:
    rpc = start(bash("rm -rf notes") + "- text: Understood.\n", extra=ASKING)
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Clean up."}})
    asked = rpc.until(is_event(1, "permission_request"))["event"]
    bad = rpc.call(2, "permission_reply", request_id=asked["request_id"], choice="maybe")
    assert bad["error"]["type"] == "InvalidParams"
    refused = rpc.call(
        3, "permission_reply", request_id=asked["request_id"], choice="deny",
        reason="never delete notes",
    )  # fmt: skip
    assert refused["result"] == {"ok": True}
    assert rpc.final(1)["result"]["reason"] == "completed"
    (result,) = events(rpc, 1, "tool_result")
    assert result["executed"] is False
    assert result["content"].endswith("the client refused this call: never delete notes")


def test_a_client_that_never_answers_gets_a_deny_after_the_timeout(start: Start) -> None:
    rpc = start(
        bash("echo unanswered") + "- text: Gave up.\n",
        extra=ASKING + "limits: {permission_timeout: 0.5}\n",
    )
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Run it."}})
    asked = rpc.until(is_event(1, "permission_request"))["event"]
    assert rpc.final(1)["result"]["text"] == "Gave up."
    (result,) = events(rpc, 1, "tool_result")
    assert result["executed"] is False
    assert NEEDS_APPROVAL in result["content"] and "no answer within 0.5 s" in result["content"]
    late = rpc.call(2, "permission_reply", request_id=asked["request_id"], choice="once")
    assert late["error"]["type"] == "InvalidParams"
    assert rpc.call(3, "state")["result"]["permission_requests"] == []


def test_cancel_while_a_question_waits(start: Start) -> None:
    rpc = start(bash("echo never") + "- text: Later.\n", extra=ASKING)
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Run it."}})
    asked = rpc.until(is_event(1, "permission_request"))["event"]
    assert rpc.call(2, "cancel")["result"] == {"cancelled": True}
    assert rpc.final(1)["error"]["type"] == "Cancelled"
    state = rpc.call(3, "state")["result"]
    assert state["permission_requests"] == [] and state["status"] == "idle"
    late = rpc.call(4, "permission_reply", request_id=asked["request_id"], choice="once")
    assert late["error"]["type"] == "InvalidParams"


def test_bypass_mode_asks_nothing(start: Start, tmp_path: Path) -> None:
    rpc = start(bash("echo free") + "- text: Done.\n", "--permission-mode", "bypass",
                extra=ASKING)  # fmt: skip
    assert rpc.call(1, "prompt", text="Run it.")["result"]["reason"] == "completed"
    assert events(rpc, 1, "permission_request") == []
    assert rpc.call(2, "state")["result"]["permission_mode"] == "bypass"
    assert "permission mode: bypass" in rpc.error_output()


# -- steering, following up, state --------------------------------------------------------


def test_steer_and_follow_up_while_a_slow_tool_runs(start: Start, tmp_path: Path) -> None:
    rpc = start(bash(WAIT_FOR_GO) + "- text: Steered.\n- text: Followed up.\n")
    rpc.send({"id": 1, "method": "prompt", "params": {"text": "Wait for go."}})
    rpc.until(is_event(1, "tool_call"))
    wait_until_started(tmp_path / "work")
    steered = rpc.call(2, "steer", text="check the notes too")
    assert steered["result"] == {"queued": True, "streaming": True}
    assert rpc.call(3, "follow_up", text="then summarise")["result"]["queued"] is True
    state = rpc.call(4, "state")["result"]
    assert state["status"] == "streaming"
    assert state["queued"] == {"steers": ["check the notes too"], "follow_ups": ["then summarise"]}
    assert not [r for r in rpc.replies if r.get("id") == 1 and "result" in r]  # still running
    (tmp_path / "work" / "go").touch()
    end = rpc.final(1)["result"]
    assert end["reason"] == "completed" and end["text"] == "Followed up."
    delivered = events(rpc, 1, "user_message")
    assert [(d["source"], d["text"]) for d in delivered] == [
        ("steer", "check the notes too"), ("follow_up", "then summarise"),
    ]  # fmt: skip
    order = [r for r in rpc.replies if r.get("id") in (1, 2) and ("result" in r or "event" in r)]
    assert order.index(steered) < order.index(rpc.final(1))  # answered while it ran
    roles = [
        (m["role"], m.get("content") or m.get("text")) for m in rpc.call(5, "messages")["result"]
    ]
    assert roles == [
        ("user", "Wait for go."), ("assistant", ""), ("tool", "went"),
        ("user", "check the notes too"), ("assistant", "Steered."),
        ("user", "then summarise"), ("assistant", "Followed up."),
    ]  # fmt: skip
    idle = rpc.call(6, "state")["result"]
    assert idle["status"] == "idle" and idle["queued"] == {"steers": [], "follow_ups": []}
    assert idle["session_id"] and Path(idle["session_file"]).is_file()
    assert set(idle["usage"]) == {"input_tokens", "output_tokens", "cache_read_tokens",
                                  "cache_write_tokens"}  # fmt: skip
    assert idle["context"] == {"tokens": 0, "window": None}


def test_bad_steers_are_refused(start: Start) -> None:
    rpc = start("- text: unused\n")
    assert rpc.call(1, "steer", text="")["error"]["type"] == "InvalidParams"
    assert rpc.call(2, "follow_up")["error"]["type"] == "InvalidParams"
    assert rpc.call(3, "steer", text=["x"])["error"]["type"] == "InvalidParams"
    unknown = rpc.call(4, "nope")["error"]
    assert unknown["type"] == "MethodNotFound"
    for method in ("steer", "follow_up", "state", "compact", "fork", "sessions",
                   "switch_session", "permission_reply"):  # fmt: skip
        assert method in unknown["message"]


# -- compact, fork, sessions ----------------------------------------------------------------


def test_compact_fork_switch_and_list(start: Start) -> None:
    rpc = start(
        '- text: First answer.\n- text: Second answer.\n- text: "## Goal\\nthe summary"\n'
        "- text: On the fork.\n"
    )
    assert rpc.call(1, "prompt", text="first")["result"]["reason"] == "completed"
    assert rpc.call(2, "prompt", text="second")["result"]["reason"] == "completed"
    messages = rpc.call(3, "messages")["result"]
    answer = next(m for m in messages if m.get("text") == "First answer.")
    assert all(m["entry_id"] for m in messages)

    compacted = rpc.call(4, "compact", instructions="keep the goal")["result"]
    assert compacted["compacted"] is True
    assert compacted["compaction"]["type"] == "compaction"
    assert compacted["compaction"]["summary"] == "## Goal\nthe summary"
    after = rpc.call(5, "messages")["result"]
    assert "the summary" in after[0]["content"] and after[-1]["text"] == "Second answer."
    original = rpc.call(6, "state")["result"]["session_id"]

    forked = rpc.call(7, "fork", entry_id=answer["entry_id"][:6])["result"]
    assert forked["session_id"] != original
    assert forked["parent_session"] == original
    assert forked["forked_from"] == answer["entry_id"] and forked["messages"] == 2
    assert rpc.call(8, "prompt", text="on the fork")["result"]["text"] == "On the fork."

    listed = rpc.call(9, "sessions")["result"]
    assert [s["id"] for s in listed] == [forked["session_id"], original]
    assert listed[0]["parent_session"] == original

    back = rpc.call(10, "switch_session", session=original)["result"]
    assert back["session_id"] == original and back["messages"] == 3
    fresh = rpc.call(11, "new_session")["result"]
    assert fresh["session_id"] not in (original, forked["session_id"])
    assert rpc.call(12, "messages")["result"] == []
    missing = rpc.call(13, "fork", entry_id="ffffffffffff")
    assert missing["error"]["type"] in ("InvalidParams", "SessionError")
    assert rpc.call(14, "switch_session", session="nosuch")["error"]["type"] == "SessionError"


def test_nothing_to_compact(start: Start) -> None:
    rpc = start("- text: unused\n")
    assert rpc.call(1, "compact")["result"]["compacted"] is False


# -- continuing a session ------------------------------------------------------------------


def test_rpc_continues_the_latest_session(start: Start, tmp_path: Path) -> None:
    first = start("- text: Hi.\n")
    assert first.call(1, "prompt", text="hello")["result"]["reason"] == "completed"
    session_id = first.call(2, "state")["result"]["session_id"]
    first.finish()

    second = start("- text: Again.\n", "--continue")
    assert second.call(1, "state")["result"]["session_id"] == session_id
    assert [m["role"] for m in second.call(2, "messages")["result"]] == ["user", "assistant"]

    refused = subprocess.run(
        [sys.executable, "-m", "assembler", "rpc", str(tmp_path / "agent.yaml"), "--resume"],
        input="", capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ}, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "--resume without an ID needs a terminal" in refused.stderr


def test_every_method_has_its_example_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## RPC mode", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \| `\{", section, re.M))
    server = RpcServer(cast(Agent, object()), lambda message: None)
    assert documented == {"prompt", "cancel", *IMMEDIATE, *server._methods()}
    for method in documented:
        assert f'"method": "{method}"' in section, method
