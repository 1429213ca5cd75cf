"""Session files, traces and results files for the view's tests, written with the
project's own writers (`SessionStore`, `TraceWriter`'s record format), so the view
reads what `run` and `eval` really write.

`hostile_session` carries script and HTML payloads in every place a person would see
text: messages, tool names, file names, memory records, sources, audit reasons, the
agent's folder and the file name itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from assembler.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from assembler.sessions.store import Session, SessionStore

REPO = Path(__file__).resolve().parents[1]

PAYLOADS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    '"><svg onload=alert(3)>',
    "'><iframe src=javascript:alert(4)></iframe>",
    '<a href="javascript:alert(5)">click me</a>',
    "</pre></li></ol><script>alert(6)</script>",
    "<style>body{display:none}</style>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(7)'>",
    "{{ 7*7 }}{% if 1 %}jinja{% endif %}",
)
ALL = " ".join(PAYLOADS)


def trace_line(path: Path, record: dict[str, Any]) -> None:
    base = {
        "time": "2026-12-01T10:00:01.000+00:00",
        "phase": "done",
        "turn": 1,
        "call_id": "c1",
        "tool": "read",
        "tool_source": "builtin",
        "proposed": {"arguments": {}},
        "permission": None,
        "decision": {"allowed": True, "blocked_by": None, "reason": None},
        "executed": True,
        "raw_result": {"content": "", "is_error": False, "details": {}},
        "rewritten_by": [],
        "model_saw": {"content": "", "is_error": False, "details": {}},
        "effects": [],
        "duration_ms": 1.0,
    }
    base.update(record)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(base, ensure_ascii=False, separators=(",", ":")) + "\n")


def trace_of(session: Session) -> Path:
    return session.path.with_name(f"{session.id}.trace.jsonl")


def hostile_session(root: Path) -> Session:
    """A session whose every shown string is a payload."""
    folder = root / "sessions" / "<b>agent</b>"
    store = SessionStore(folder)
    session = store.create(
        agent=f"agent {PAYLOADS[0]}",
        manifest=None,
        model=f"scripted:{PAYLOADS[1]}",
        metadata={"workspace": f"/work/{PAYLOADS[2]}"},
    )
    session.append("event", {"event": {"type": "run_start", "prompt": ALL}})
    session.append_message(UserMessage(f"please read {ALL}"))
    session.append(
        "prompt",
        {
            "sha256": "0" * 64,
            "estimated_tokens": 10,
            "sections": [
                {"name": "identity", "template": PAYLOADS[3], "sources": [PAYLOADS[4]],
                 "estimated_tokens": 5, "text": f"You are {ALL}"},
                {"name": "memory", "template": "default memory template",
                 "sources": [f"memory record: {PAYLOADS[5]}"], "estimated_tokens": 5,
                 "text": f"<relevant_memories>\n\n## {PAYLOADS[6]} (project)\n\n{ALL}\n\n</relevant_memories>"},
            ],
            "tools": [{"name": PAYLOADS[7], "source": PAYLOADS[8], "description": ALL,
                       "parameters": {"type": "object", "properties": {PAYLOADS[0]: {}}}}],
        },
    )  # fmt: skip
    call = ToolCall("c1", f"read{PAYLOADS[1]}", {"path": f"notes/{PAYLOADS[2]}.txt"})
    session.append_message(
        AssistantMessage(text=f"I will read {ALL}", tool_calls=(call,)),
        usage=Usage(input_tokens=100, output_tokens=20),
    )
    session.append_message(ToolResultMessage("c1", call.name, f"file says {ALL}", is_error=True))
    session.append(
        "compaction",
        {"summary": f"summary {ALL}", "first_kept": None, "tokens_before": 5, "reason": "manual"},
    )
    session.append(
        "subagent",
        {"call_id": "c1", "tool": PAYLOADS[3], "agent_path": f"lead/{PAYLOADS[4]}",
         "session": PAYLOADS[5], "session_file": f"/x/{PAYLOADS[6]}", "trace_file": ""},
    )  # fmt: skip
    session.append("mystery", {"note": ALL})
    session.append(
        "event",
        {"event": {"type": "run_end", "reason": PAYLOADS[6], "message": ALL, "turns": 1}},
    )
    trace_line(
        trace_of(session),
        {
            "tool": call.name,
            "tool_source": f"extension:{PAYLOADS[7]}",
            "proposed": {"arguments": dict(call.arguments or {})},
            "permission": {"allowed": False, "decided_by": "rule", "rule": PAYLOADS[8],
                           "reason": PAYLOADS[0]},
            "decision": {"allowed": False, "blocked_by": PAYLOADS[1], "reason": ALL},
            "executed": False,
            "raw_result": {"content": ALL, "is_error": True, "details": {}},
            "rewritten_by": [PAYLOADS[2]],
            "model_saw": {"content": f"saw {ALL}", "is_error": True, "details": {}},
            "notes": [PAYLOADS[3]],
        },
    )  # fmt: skip
    named = folder / "<img src=x onerror=alert(9)>.jsonl"
    shutil.copyfile(session.path, named)
    return session


def hostile_results(path: Path) -> Path:
    lines = []
    for number, payload in enumerate(PAYLOADS):
        lines.append(
            {
                "eval": PAYLOADS[0], "task": f"task {payload}", "repeat": 1,
                "status": "failed" if number % 2 else "passed", "model": PAYLOADS[1],
                "reason": "completed", "error": payload if number % 2 else "",
                "checks": [{"kind": "answer_contains", "check": f"answer_contains: {payload}",
                            "passed": not number % 2, "evidence": f"evidence {ALL}"}],
                "answer": f"answer {ALL}", "turns": 2,
                "usage": {"input_tokens": 10, "output_tokens": 5}, "duration_s": 0.5,
                "session": f"/x/{payload}.jsonl",
            }
        )  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def results_file(path: Path, outcomes: dict[str, list[str]], *, cost: float | None = None) -> Path:
    """A results file: per task, the status of each repeat."""
    lines = []
    for task, statuses in outcomes.items():
        for repeat, status in enumerate(statuses, start=1):
            record: dict[str, Any] = {
                "eval": "shipping",
                "task": task,
                "repeat": repeat,
                "status": status,
                "model": "scripted:x.yaml",
                "reason": "completed",
                "checks": [
                    {"kind": "command", "check": "command: make test", "passed": status == "passed",
                     "evidence": "exit 0" if status == "passed" else "exit 1: FAILED"}
                ],
                "answer": f"answer of {task}",
                "turns": 2,
                "usage": {"input_tokens": 100 * repeat, "output_tokens": 10},
                "duration_s": round(0.1 * repeat, 3),
            }  # fmt: skip
            if cost is not None:
                record["usage"]["cost_usd"] = cost
            lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


def shipping_session(tmp: Path, data: Path) -> Path:
    """A real run of the shipping example (its replay, its guard extension) recorded
    in `data`; the session file."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from assembler import build_agent

    copy = tmp / "demo"
    shutil.copytree(REPO / "agents", copy / "agents")
    shutil.copytree(REPO / "examples", copy / "examples")
    agent = build_agent(
        copy / "agents" / "shipping-fixer.yaml", trust=True, session_dir=data / "shipping-fixer"
    )

    async def go() -> None:
        async with agent:
            await agent.prompt("Fix the failing shipping test.")

    # a thread of its own: Playwright's sync API keeps an event loop in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result()
    assert agent.session is not None
    return agent.session.path
