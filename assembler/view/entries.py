"""What a page shows of each session entry: parsed only for the entries on the page,
with each tool call joined to its audit record.

Every value here is still untrusted text; the templates escape it. Long texts are cut
for the page (the file keeps them, and `assemble report` shows them whole).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assembler.view.lines import Line
from assembler.view.session_file import EntryInfo, Placed, SessionFile, number, usage_cost
from assembler.view.trace_file import CallKey, TraceFile

PAGE_LIMIT = 4_000
"""Characters of one text shown on a page of many entries; the rest is on the entry's
own page (`/entry/`), so a page of long tool results stays quick to paint."""


@dataclass
class Text:
    """A text cut to a limit, with how much was left out."""

    shown: str
    left_out: int = 0
    lines: int = 1

    @classmethod
    def of(cls, value: object, limit: int | None) -> Text:
        text = value if isinstance(value, str) else ("" if value is None else pretty(value))
        count = text.count("\n") + 1
        if limit is not None and len(text) > limit:
            return cls(text[:limit], len(text) - limit, count)
        return cls(text, 0, count)


def pretty(value: object) -> str:
    """JSON for a person: indented, non-ASCII kept."""
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


@dataclass
class Audit:
    """One call's audit record, in the words a reviewer uses."""

    verdict: str
    """`ran`, `blocked`, `denied`, `unfinished`"""
    summary: str
    source: str = ""
    rewritten_by: tuple[str, ...] = ()
    raw_result: Text | None = None
    model_saw: Text | None = None
    duration_ms: float | None = None
    notes: tuple[str, ...] = ()
    permission: str = ""


@dataclass
class Call:
    id: str
    name: str
    arguments: Text
    error: str = ""
    audit: Audit | None = None
    child: str = ""
    """The URL name of the sub-agent session this call ran, when known."""


@dataclass
class Item:
    """One entry on a page."""

    id: str
    number: int
    depth: int
    kind: str
    label: str
    time: str
    turn: int = 0
    branch_from: str = ""
    text: Text | None = None
    calls: list[Call] = field(default_factory=list)
    usage: str = ""
    is_error: bool = False
    link: str = ""
    """A session's URL name (a sub-agent's session) or a prompt entry's id."""
    data: Text | None = None


def audit_of(record: Mapping[str, Any], limit: int | None) -> Audit:
    decision = record.get("decision") if isinstance(record.get("decision"), Mapping) else {}
    permission = record.get("permission") if isinstance(record.get("permission"), Mapping) else None
    assert isinstance(decision, Mapping)
    said = ""
    if permission is not None:
        rule = f" rule `{permission.get('rule')}`" if permission.get("rule") else ""
        allowed = "allowed" if permission.get("allowed") else "denied"
        said = f"permissions: {allowed} by {permission.get('decided_by')}{rule}"
        if permission.get("reason"):
            said += f": {permission.get('reason')}"
    if record.get("phase") == "started":
        verdict, summary = "unfinished", "started; the run stopped before it finished"
    elif decision.get("allowed", True) is False:
        who = decision.get("blocked_by") or "?"
        verdict = (
            "denied" if permission is not None and not permission.get("allowed") else "blocked"
        )
        summary = f"blocked by {who}" + (
            f": {decision.get('reason')}" if decision.get("reason") else ""
        )
    else:
        verdict = "ran" if record.get("executed") else "not run"
        summary = "allowed, ran" if record.get("executed") else "allowed, did not run"
    raw = record.get("raw_result") if isinstance(record.get("raw_result"), Mapping) else None
    saw = record.get("model_saw") if isinstance(record.get("model_saw"), Mapping) else None
    rewritten = record.get("rewritten_by")
    notes = record.get("notes")
    duration = record.get("duration_ms")
    return Audit(
        verdict=verdict,
        summary=summary,
        source=str(record.get("tool_source") or ""),
        rewritten_by=tuple(str(r) for r in rewritten) if isinstance(rewritten, list) else (),
        raw_result=Text.of(raw.get("content"), limit) if raw is not None else None,
        model_saw=Text.of(saw.get("content"), limit) if saw is not None else None,
        duration_ms=float(duration) if isinstance(duration, int | float) else None,
        notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
        permission=said,
    )


def _stamp(value: object) -> str:
    """A comparable UTC time to the millisecond, from either file's spelling."""
    return str(value or "")[:23]


def usage_text(usage: Mapping[str, Any] | None) -> str:
    if not usage:
        return ""
    parts = [
        f"{int(number(usage.get('input_tokens'))):,} in",
        f"{int(number(usage.get('output_tokens'))):,} out",
    ]
    cached = int(number(usage.get("cache_read_tokens")))
    if cached:
        parts.append(f"{cached:,} cache read")
    written = int(number(usage.get("cache_write_tokens")))
    if written:
        parts.append(f"{written:,} cache write")
    cost = usage_cost(usage)
    if cost is not None:
        parts.append(f"${cost:.4f}")
    return ", ".join(parts)


class ItemMaker:
    """Turns placed entries into `Item`s; `child_key(session_id)` names a sub-agent's
    session file when it sits beside this one."""

    def __init__(
        self,
        session: SessionFile,
        trace: TraceFile,
        child_key: Any,
        *,
        limit: int | None = PAGE_LIMIT,
    ) -> None:
        self.session = session
        self.trace = trace
        self.child_key = child_key
        self.limit = limit

    def items(self, placed: Sequence[Placed]) -> list[Item]:
        records = self.session.parse_many([p.line for p in placed])
        calls = self.trace.calls()
        children: dict[str, str] = {}
        for record in records:
            if record.get("type") == "subagent" and isinstance(record.get("call_id"), str):
                key = self.child_key(record.get("session"))
                if key:
                    children[record["call_id"]] = key
        return [
            self._item(p, record, calls, children)
            for p, record in zip(placed, records, strict=True)
        ]

    def _item(
        self,
        placed: Placed,
        record: Mapping[str, Any],
        calls: Mapping[tuple[int, str], list[Line[CallKey]]],
        children: Mapping[str, str],
    ) -> Item:
        info: EntryInfo = placed.line.info
        item = Item(
            id=info.id,
            number=placed.line.number,
            depth=placed.depth,
            kind=info.type,
            label=info.type,
            time=info.time,
            turn=placed.turn,
            branch_from=placed.branch_from,
        )
        if not record:
            item.kind, item.label = "unreadable", "unreadable line"
            return item
        limit = self.limit
        if info.type == "message":
            message = record.get("message") if isinstance(record.get("message"), Mapping) else {}
            assert isinstance(message, Mapping)
            role = str(message.get("role", ""))
            item.kind = role or "message"
            if role == "user":
                item.label = {"steer": "steer", "follow-up": "follow-up"}.get(placed.kind, "user")
                item.text = Text.of(message.get("content"), limit)
            elif role == "context":
                item.label = "context (memory)"
                item.text = Text.of(message.get("content"), limit)
            elif role == "assistant":
                item.label = f"assistant · turn {placed.turn}"
                item.text = Text.of(message["text"], limit) if message.get("text") else None
                usage = record.get("usage")
                item.usage = usage_text(usage if isinstance(usage, Mapping) else None)
                item.calls = self._calls(message, info.time, placed.turn, calls, children)
            elif role == "tool":
                item.label = f"result of {message.get('name', '?')}"
                item.text = Text.of(message.get("content"), limit)
                item.is_error = bool(message.get("is_error"))
            else:
                item.data = Text.of(message, limit)
        elif info.type == "event":
            event = record.get("event") if isinstance(record.get("event"), Mapping) else {}
            assert isinstance(event, Mapping)
            kind = str(event.get("type", ""))
            item.kind = kind or "event"
            if kind == "run_start":
                item.label = "run started"  # its prompt is the user message after it
            elif kind == "run_end":
                item.label = f"run ended: {event.get('reason', '?')}"
                usage = event.get("usage")
                item.usage = usage_text(usage if isinstance(usage, Mapping) else None)
                if event.get("message"):
                    item.text = Text.of(event.get("message"), limit)
                item.is_error = event.get("reason") not in ("completed", None)
            else:
                item.data = Text.of(event, limit)
        elif info.type == "compaction":
            item.label = f"compaction ({record.get('reason') or 'manual'})"
            item.text = Text.of(record.get("summary"), limit)
            before = record.get("tokens_before")
            if isinstance(before, int):
                item.usage = f"{before:,} input tokens before"
        elif info.type == "subagent":
            item.label = f"sub-agent {record.get('agent_path') or record.get('tool')}"
            item.link = self.child_key(record.get("session")) or ""
            item.text = Text.of(f"session {record.get('session', '?')}", limit)
        elif info.type == "prompt":
            item.label = "system prompt"
            sections = record.get("sections")
            names = (
                [str(s.get("name")) for s in sections if isinstance(s, Mapping)]
                if isinstance(sections, list)
                else []
            )
            tools = record.get("tools")
            count = len(tools) if isinstance(tools, list) else 0
            item.text = Text.of(
                f"sections: {', '.join(names) or '?'}; {count} tool schema(s)", limit
            )
            item.link = info.id
        else:
            item.data = Text.of(
                {k: v for k, v in record.items() if k not in ("id", "parent")}, limit
            )
        return item

    def _calls(
        self,
        message: Mapping[str, Any],
        time: str,
        turn: int,
        calls: Mapping[tuple[int, str], list[Line[CallKey]]],
        children: Mapping[str, str],
    ) -> list[Call]:
        out = []
        raw_calls = message.get("tool_calls")
        for raw in raw_calls if isinstance(raw_calls, list) else []:
            if not isinstance(raw, Mapping):
                continue
            call_id = str(raw.get("id", ""))
            arguments = raw.get("arguments")
            shown = arguments if arguments is not None else raw.get("raw_arguments", "")
            call = Call(
                id=call_id,
                name=str(raw.get("name", "?")),
                arguments=Text.of(shown, self.limit),
                error=str(raw.get("arguments_error") or ""),
                child=children.get(call_id, ""),
            )
            candidates = calls.get((turn, call_id), [])
            chosen = next(
                (line for line in candidates if _stamp(self._time_of(line)) >= _stamp(time)),
                candidates[-1] if candidates else None,
            )
            if chosen is not None:
                record = self.trace.record(chosen)
                call.audit = audit_of(record, self.limit)
                if not call.child:
                    raw_result = record.get("raw_result")
                    details = raw_result.get("details") if isinstance(raw_result, Mapping) else None
                    if isinstance(details, Mapping) and details.get("session"):
                        call.child = self.child_key(details.get("session")) or ""
            out.append(call)
        return out

    def _time_of(self, line: Line[CallKey]) -> str:
        raw = self.trace.index.read(line)
        start = raw.find(b'"time":"')
        return raw[start + 8 : start + 31].decode("ascii", "replace") if start >= 0 else ""
