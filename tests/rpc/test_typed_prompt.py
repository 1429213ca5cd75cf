"""RPC `prompt` with `params`: a typed agent's task runs without `text`, bad values are
one InvalidParams error listing every problem, and the result carries `output`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MANIFEST = """\
version: 1
name: triage
identity: You triage issues.
model: scripted:script.yaml
tools: {sets: []}
parameters:
  issue: {type: string}
  limit: {type: integer, default: 2, minimum: 1}
task: "Triage {{ issue }} with at most {{ limit }} labels."
output:
  schema: {type: object, required: [priority], properties: {priority: {enum: [p0, p1]}}}
"""


def test_prompt_with_params_runs_the_task_and_returns_the_output(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(MANIFEST)
    (tmp_path / "script.yaml").write_text(
        "- tool_calls: [{name: final_answer, arguments: {priority: p0}}]\n"
    )
    requests = [
        {"id": 1, "method": "prompt", "params": {"params": {"limit": 0, "isue": "x"}}},
        {"id": 2, "method": "prompt", "params": {"params": {"issue": "#7"}}},
        {"id": 3, "method": "shutdown"},
    ]
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "assembler",
            "rpc",
            str(tmp_path / "agent.yaml"),
            "--trust",
            "--no-session",
        ],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert process.returncode == 0, process.stderr
    replies = [json.loads(line) for line in process.stdout.splitlines()]
    error = next(r for r in replies if r.get("id") == 1)["error"]
    assert error["type"] == "InvalidParams"
    assert error["message"] == (
        "3 problems with the parameters of agent `triage`:\n"
        "  isue: not a parameter of this agent (its parameters: `issue`, `limit`); did you "
        "mean `issue`?\n"
        "  issue: required (string), and not given\n"
        "  limit: 0 is less than the minimum of 1"
    )
    events = [r["event"] for r in replies if r.get("id") == 2 and "event" in r]
    assert events[0]["type"] == "run_start"
    assert events[0]["prompt"] == "Triage #7 with at most 2 labels."
    result = next(r for r in replies if r.get("id") == 2 and "result" in r)["result"]
    assert result["reason"] == "completed" and result["output"] == {"priority": "p0"}
