"""One session file for the view: its entries placed in the tree from an index, each
entry parsed only when a page shows it.

The index keeps, per line, what placing and counting need: id, parent, type, time,
the role of a message, an assistant message's `usage`, the type of an event (and the
reason of a `run_end`). They are taken from the start of the line with one regular
expression when the line has the writer's layout (`{"id":..,"parent":..,"type":..,
"time":..`), else from the whole parsed line, so a hand-written or foreign file still
reads. A line that is not an entry is counted and skipped, as `sessions.store` does.
Fields are read defensively: usage and cost are shown when a session has them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from assembler.errors import SessionError
from assembler.sessions.records import parse_header
from assembler.view.lines import Line, LineIndex

_HEAD = re.compile(
    rb'\{"id":"([^"\\]{1,128})","parent":(?:null|"([^"\\]{1,128})"),'
    rb'"type":"([^"\\]{1,64})","time":"([^"\\]{0,64})"'
)
_ROLE = re.compile(rb',"message":\{"role":"([a-z_]{1,32})"')
_EVENT = re.compile(rb',"event":\{"type":"([a-z_]{1,32})"')
_DECODER = json.JSONDecoder()

LIVE_SECONDS = 30.0
"""A session whose run has not ended and whose file changed this recently is live."""


class EntryInfo(NamedTuple):
    """What the index knows of one entry without parsing it whole (a named tuple:
    one is made per line of every file the view reads)."""

    id: str
    parent: str | None
    type: str
    time: str
    role: str = ""
    event: str = ""
    usage: Mapping[str, Any] | None = None
    end: Mapping[str, Any] | None = None
    """A `run_end` event, parsed (they are few, and the list's status comes from them)."""
    bad: bool = False


BAD = EntryInfo("", None, "", "", bad=True)


def _usage_of_whole(raw: bytes) -> Mapping[str, Any] | None:
    """The entry's `usage`, from the whole parsed line."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    usage = value.get("usage") if isinstance(value, dict) else None
    return usage if isinstance(usage, dict) else None


def extract(raw: bytes) -> EntryInfo:
    """The `EntryInfo` of one line (see the module docstring)."""
    head = _HEAD.match(raw)
    if head is not None:
        entry_id, parent, kind, stamp = (g.decode() if g else None for g in head.groups())
        assert entry_id is not None and kind is not None
        rest = head.end()
        role = event = ""
        usage: Mapping[str, Any] | None = None
        end: Mapping[str, Any] | None = None
        if kind == "message":
            match = _ROLE.match(raw, rest)
            role = match.group(1).decode() if match else ""
            if role == "assistant":
                usage = _fast_usage(raw)
        elif kind == "event":
            match = _EVENT.match(raw, rest)
            event = match.group(1).decode() if match else ""
            if event == "run_end":
                end = _event_of(raw)
        return EntryInfo(entry_id, parent, kind, stamp or "", role, event, usage, end)
    return _slow(raw)


def _fast_usage(raw: bytes) -> Mapping[str, Any] | None:
    at = raw.rfind(b',"usage":{')
    if at < 0:
        return None
    try:
        value, stop = _DECODER.raw_decode(raw[at + 9 :].decode("utf-8", "replace"))
    except ValueError:
        return None
    if raw[at + 9 :].decode("utf-8", "replace")[stop:].strip() != "}":
        return _usage_of_whole(raw)  # another field follows: read the whole line
    return value if isinstance(value, dict) else None


def _event_of(raw: bytes) -> Mapping[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    event = record.get("event") if isinstance(record, dict) else None
    return event if isinstance(event, dict) else None


def _slow(raw: bytes) -> EntryInfo:
    try:
        record = json.loads(raw)
    except ValueError:
        return BAD
    if not isinstance(record, dict):
        return BAD
    entry_id, kind, parent = record.get("id"), record.get("type"), record.get("parent")
    if not isinstance(entry_id, str) or not entry_id or not isinstance(kind, str):
        return BAD
    if parent is not None and not isinstance(parent, str):
        return BAD
    stamp = record.get("time")
    message = record.get("message")
    role = str(message.get("role", "")) if isinstance(message, dict) else ""
    event = record.get("event")
    event_type = str(event.get("type", "")) if isinstance(event, dict) else ""
    usage = record.get("usage") if isinstance(record.get("usage"), dict) else None
    return EntryInfo(
        entry_id,
        parent,
        kind,
        stamp if isinstance(stamp, str) else "",
        role,
        event_type,
        usage if role == "assistant" else None,
        event if event_type == "run_end" and isinstance(event, dict) else None,
    )


class Placed(NamedTuple):
    """An entry in display order: its line, its depth (0 on the main line, one more
    inside each side branch) and, for the first entry of a side branch, the entry it
    branches from."""

    line: Line[EntryInfo]
    depth: int
    branch_from: str = ""
    turn: int = 0
    """The model request this entry belongs to within its run (trace records' `turn`)."""
    kind: str = ""
    """`prompt`, `steer` or `follow-up` for a user message; else empty."""


@dataclass
class Totals:
    """What the session list shows of a session, kept up to date as lines arrive."""

    entries: int = 0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float | None = None
    skipped: int = 0
    runs: int = 0
    last_end: Mapping[str, Any] | None = None
    first_prompt: str = ""
    last_time: str = ""
    open_run: bool = False
    usage_values: list[tuple[int, int, int]] = field(default_factory=list)
    """(input, output, cache read) tokens of each turn, in file order."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def number(value: object) -> float:
    """A usage field as a number; anything else (absent, text, bool) counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


def usage_cost(usage: Mapping[str, Any]) -> float | None:
    """The cost a usage record carries, when it carries one (`cost_usd` or `cost`)."""
    for key in ("cost_usd", "cost"):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, Mapping):  # {"total": ..} or {"usd": ..}
            for inner in ("total_usd", "total", "usd"):
                got = value.get(inner)
                if isinstance(got, int | float) and not isinstance(got, bool):
                    return float(got)
    return None


class SessionFile:
    """A session file, indexed; `refresh()` reads what was appended since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index: LineIndex[EntryInfo] = LineIndex(path, extract, skip_first=True)
        self.header: dict[str, Any] = {}
        self.totals = Totals()
        self._counted = 0
        self._order: tuple[int, list[Placed], Tail | None] | None = None
        self._lock = threading.Lock()

    def refresh(self) -> bool:
        """Read new lines; raise `SessionError` when the file is not a session this
        version reads (no header, a newer format)."""
        changed = self.index.refresh()
        if not self.header:
            if not self.index.first_line.strip():
                raise SessionError(f"{self.path} is empty or does not start with a session header")
            self.header = parse_header(self.index.first_line, self.path)
        with self._lock:
            lines = self.index.lines
            if len(lines) < self._counted:  # the file was replaced: count afresh
                self.totals, self._counted = Totals(), 0
            self._count(lines[self._counted :])
            self._counted = len(lines)
        return changed

    def _count(self, lines: list[Line[EntryInfo]]) -> None:
        totals = self.totals
        for line in lines:
            info = line.info
            if info.bad:
                totals.skipped += 1
                continue
            totals.entries += 1
            totals.last_time = info.time or totals.last_time
            if info.event == "run_start":
                totals.runs += 1
                totals.open_run = True
                if not totals.first_prompt:
                    totals.first_prompt = self._prompt_of(line)
            elif info.event == "run_end":
                totals.open_run = False
                totals.last_end = info.end
            if info.role == "assistant":
                totals.turns += 1
                usage = info.usage or {}
                tokens_in = int(number(usage.get("input_tokens")))
                tokens_out = int(number(usage.get("output_tokens")))
                cached = int(number(usage.get("cache_read_tokens")))
                totals.input_tokens += tokens_in
                totals.output_tokens += tokens_out
                totals.cache_read_tokens += cached
                cost = usage_cost(usage)
                if cost is not None:
                    totals.cost = (totals.cost or 0.0) + cost
                totals.usage_values.append((tokens_in, tokens_out, cached))
            elif info.role == "user" and not totals.first_prompt:
                totals.first_prompt = self._prompt_of(line)

    def _prompt_of(self, line: Line[EntryInfo]) -> str:
        record = self.parse(line)
        event = record.get("event")
        if isinstance(event, dict) and isinstance(event.get("prompt"), str):
            return str(event["prompt"])[:500]
        message = record.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            return str(message["content"])[:500]
        return ""

    def parse(self, line: Line[EntryInfo]) -> dict[str, Any]:
        """One entry, parsed whole; `{}` when the line does not parse."""
        try:
            record = json.loads(self.index.read(line))
        except (ValueError, OSError):
            return {}
        return record if isinstance(record, dict) else {}

    def parse_many(self, lines: list[Line[EntryInfo]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for raw in self.index.read_many(lines):
            try:
                record = json.loads(raw)
            except ValueError:
                record = {}
            out.append(record if isinstance(record, dict) else {})
        return out

    def status(self, now: float | None = None) -> str:
        """`live` (a run in progress, the file changed in the last 30 s), `stopped`
        (a run that never ended), or the last run's end reason (`completed`, ...)."""
        totals = self.totals
        if totals.open_run:
            try:
                modified = self.path.stat().st_mtime
            except OSError:
                modified = 0.0
            recent = (now if now is not None else time.time()) - modified < LIVE_SECONDS
            return "live" if recent else "stopped"
        if totals.last_end is not None:
            return str(totals.last_end.get("reason") or "ended")
        return "empty" if not totals.entries else "no run"

    def order(self) -> list[Placed]:
        """Every entry in display order: the main line (the branch to the last entry)
        straight down, each side branch nested where it leaves it. Entries appended
        to the end of the main line (a live run) are placed without placing the rest
        again."""
        with self._lock:
            lines = self.index.lines
            cached = self._order
            if cached is not None and cached[0] == len(lines):
                return cached[1]
            if cached is not None:
                grown = _extend(cached[1], cached[2], lines[cached[0] :])
                if grown is not None:
                    self._order = (len(lines), *grown)
                    return grown[0]
            placed, tail = _place([line for line in lines if not line.info.bad])
            self._order = (len(lines), placed, tail)
            return placed


Tail = tuple[str, int, str]
"""The last entry of the main line: its id, its turn, the role of the message at it."""


def _step(info: EntryInfo, turn: int, before: str) -> tuple[int, str, str]:
    """The turn of an entry, its kind (for a user message) and the role after it."""
    kind = ""
    if info.event == "run_start":
        turn = 0
    elif info.role == "assistant":
        turn += 1
    elif info.role == "user":
        kind = {"tool": "steer", "assistant": "follow-up"}.get(before, "prompt")
    if info.event == "run_start":
        return turn, kind, "start"
    return turn, kind, (info.role or before) if info.type == "message" else before


def _extend(placed: list[Placed], tail: Tail | None, new: list[Line[EntryInfo]]) -> tuple[list[Placed], Tail | None] | None:  # fmt: skip
    """`placed` with `new` after it, when each new entry continues the one before it on
    the main line; None when one does not (then everything is placed again)."""
    if tail is None:
        return None
    current, turn, before = tail
    grown = list(placed)
    for line in new:
        info = line.info
        if info.bad:
            continue
        if info.parent != current:
            return None
        turn, kind, before = _step(info, turn, before)
        grown.append(Placed(line, 0, "", turn, kind))
        current = info.id
    return grown, (current, turn, before)


def _place(lines: list[Line[EntryInfo]]) -> tuple[list[Placed], Tail | None]:
    by_id: dict[str, Line[EntryInfo]] = {}
    for line in lines:
        by_id.setdefault(line.info.id, line)
    children: dict[str | None, list[Line[EntryInfo]]] = {}
    for line in by_id.values():
        parent = line.info.parent
        children.setdefault(parent if parent in by_id else None, []).append(line)
    main: set[str] = set()
    last = lines[-1].info.id if lines else None
    current = last
    while current is not None and current in by_id and current not in main:
        main.add(current)
        current = by_id[current].info.parent
    out: list[Placed] = []
    tail: Tail | None = None
    # (line, depth, branch_from, turn, role before); iterative: sessions are deep chains
    stack: list[tuple[Line[EntryInfo], int, str, int, str]] = [
        (root, 0 if root.info.id in main else 1, "", 0, "")
        for root in reversed(children.get(None, []))
    ]
    while stack:
        line, depth, branch_from, turn, before = stack.pop()
        info = line.info
        turn, kind, role = _step(info, turn, before)
        out.append(Placed(line, depth, branch_from, turn, kind))
        if info.id == last:
            tail = (info.id, turn, role)
        kids = children.get(info.id)
        if not kids:
            continue
        if len(kids) == 1:
            stack.append((kids[0], depth, "", turn, role))
            continue
        on_main = [k for k in kids if k.info.id in main]
        straight = on_main[0] if on_main else kids[-1]
        stack.append((straight, depth, "", turn, role))
        for side in reversed([k for k in kids if k is not straight]):
            stack.append((side, depth + 1, info.id, turn, role))
    return out, tail
