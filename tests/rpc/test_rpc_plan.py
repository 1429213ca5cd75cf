"""RPC and the plan (issue 27): a `todo_write` call streams a `plan` event after its
result, and `state` has the plan as last written."""

from __future__ import annotations

from pathlib import Path

from rpcclient import RpcClient

SCRIPT = """\
- tool_calls: [{name: todo_write, arguments: {todos: [{content: Fix the fee, status: in_progress, priority: high}]}}]
- text: Planned.
"""


def test_the_plan_is_an_event_and_part_of_the_state(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "script.yaml").write_text(SCRIPT)
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: planner\nidentity: You plan.\nworkspace: work\n"
        "model: scripted:script.yaml\ntools: {sets: [todo]}\n"
    )
    rpc = RpcClient([str(manifest), "--trust", "--no-session"], cwd=tmp_path)
    try:
        rpc.until(lambda r: r.get("event", {}).get("type") == "ready")
        assert rpc.call(1, "state")["result"]["plan"] == []
        assert rpc.call(2, "prompt", text="Plan.")["result"]["reason"] == "completed"
        streamed = [r["event"] for r in rpc.replies if r.get("id") == 2 and "event" in r]
        kinds = [e["type"] for e in streamed]
        assert kinds.index("plan") == kinds.index("tool_result") + 1
        entry = {"content": "Fix the fee", "status": "in_progress", "priority": "high"}
        assert streamed[kinds.index("plan")]["entries"] == [entry]
        assert rpc.call(3, "state")["result"]["plan"] == [entry]
    finally:
        rpc.kill()
