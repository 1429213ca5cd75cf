"""The audit trace: per tool call, what was proposed, decided, executed and seen.

Extensions can add capability (register a tool), change control flow (block a call)
and change observation (rewrite a result). Each record keeps those apart: the
model's proposal, the decision and who made it, whether the tool really ran and its
raw result, who rewrote it, and what the model finally saw. Without all of them an
extension could make a trace lose both the original intent and the real outcome.

Records are JSON lines in `<session id>.trace.jsonl` beside the session file, one
record per write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assembler.runner.hooks import ToolCallRecord
from assembler.text import one_line, terminal_safe
from assembler.tools.base import ToolResult


def _result(result: ToolResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {"content": result.content, "is_error": result.is_error, "details": dict(result.details)}


def trace_record(record: ToolCallRecord, tool_source: str = "") -> dict[str, Any]:
    """The JSON form of one call."""
    effects = []
    if tool_source.startswith("extension:"):
        effects.append("capability")
    if record.decision.blocked:
        effects.append("control_flow")
    if record.rewritten_by:
        effects.append("observation")
    call = record.call
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "phase": record.phase,
        "turn": record.turn,
        "call_id": call.id,
        "tool": call.name,
        "tool_source": tool_source,
        "proposed": {
            "arguments": call.arguments,
            **({"raw_arguments": call.raw_arguments} if call.arguments is None else {}),
        },
        "permission": record.permission.to_dict() if record.permission else None,
        "decision": {
            "allowed": not record.decision.blocked,
            "blocked_by": record.decision.blocked_by or None,
            "reason": record.decision.reason or None,
        },
        "executed": record.executed,
        "raw_result": _result(record.raw_result),
        "rewritten_by": list(record.rewritten_by),
        "model_saw": _result(record.final),
        "effects": effects,
        "duration_ms": round(record.duration_ms, 3),
        **({"notes": list(record.notes)} if record.notes else {}),
        **({"sandbox": sandbox} if (sandbox := _sandbox(record.raw_result)) else {}),
    }


def _sandbox(result: ToolResult | None) -> dict[str, Any] | None:
    """How the call's processes were confined, as the tool reported it (`bash`:
    `{filesystem, network}` and what was refused), the third layer a call passes."""
    shown = result.details.get("sandbox") if result is not None else None
    return dict(shown) if isinstance(shown, Mapping) else None


class TraceWriter:
    """Appends trace records to a JSON-lines file, one `os.write` per record."""

    def __init__(self, path: Path, tool_sources: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.tool_sources = tool_sources or {}  # live: tools can join after the build
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, record: ToolCallRecord) -> None:
        data = trace_record(record, self.tool_sources.get(record.call.name, ""))
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)


def read_trace(path: Path) -> list[dict[str, Any]]:
    """One record per tool call, in order (`settled`): what `assemble trace` shows."""
    return settled(read_trace_lines(path))


def read_trace_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Every record of a trace file, `started` ones included; torn, corrupt or foreign
    lines are skipped."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("tool"), str):
                yield record


def settled(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per call: its `done` record, or, for a call the run never finished
    (killed mid-tool), the `started` record written before it ran."""
    order: dict[str, dict[str, Any]] = {}
    for record in records:
        key = f"{record.get('turn')}:{record.get('call_id')}"
        if record.get("phase") == "started" and key in order:
            continue
        order[key] = record
    return list(order.values())


def format_trace_record(record: Mapping[str, Any]) -> str:
    """A compact human-readable form for `assemble trace`, safe to print: proposals,
    results and reasons come from a model, tools and extensions, so control
    characters are shown escaped (`terminal_safe`)."""
    arguments = json.dumps(record.get("proposed", {}).get("arguments"), ensure_ascii=False)
    lines = [f"turn {record.get('turn')}  {record.get('tool')}({one_line(arguments, 200)})"]
    if record.get("tool_source"):
        lines[0] += f"  [{record['tool_source']}]"
    permission = record.get("permission")
    if isinstance(permission, dict):
        verdict = "allowed" if permission.get("allowed") else "DENIED"
        rule = f" (rule `{permission['rule']}`)" if permission.get("rule") else ""
        lines.append(
            f"  permission: {verdict} by {permission.get('decided_by')}{rule}: "
            f"{permission.get('reason')}"
        )
    decision = record.get("decision", {})
    if decision.get("allowed", True):
        lines.append("  decision: allowed")
    else:
        lines.append(
            f"  decision: BLOCKED by {decision.get('blocked_by')}: {decision.get('reason')}"
        )
    if record.get("phase") == "started":
        lines.append("  executed: started; the run stopped before it finished")
    else:
        lines.append(f"  executed: {'yes' if record.get('executed') else 'no'}")
    raw = record.get("raw_result")
    if raw is not None:
        lines.append(f"  raw result: {one_line(raw.get('content', ''), 200)}")
        child = raw.get("details") or {}
        if isinstance(child, dict) and child.get("trace_file"):  # a sub-agent's own trace
            lines.append(
                f"  sub-agent {child.get('agent')}: session {child.get('session')}, "
                f"trace {child['trace_file']}"
            )
    sandbox = record.get("sandbox")
    if isinstance(sandbox, dict):
        refused = sandbox.get("refused")
        lines.append(
            f"  sandbox: filesystem {sandbox.get('filesystem')}, network {sandbox.get('network')}"
            + (f"; refused {refused}" if isinstance(refused, list) else "")
            + ("; the output shows a refusal" if refused is True else "")
        )
    if record.get("rewritten_by"):
        lines.append(f"  rewritten by: {', '.join(record['rewritten_by'])}")
    saw = record.get("model_saw") or {}
    flag = " (error)" if saw.get("is_error") else ""
    lines.append(f"  model saw{flag}: {one_line(saw.get('content', ''), 200)}")
    lines.extend(f"  note: {note}" for note in record.get("notes", ()))
    return terminal_safe("\n".join(lines))
