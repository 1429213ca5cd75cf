"""A session's audit trace for the view: one record per tool call, found by
`(turn, call_id)`, parsed only when its call is shown.

The trace has a `started` record before a tool runs and a `done` record after; the
last record of a call wins (`sessions.trace.settled`). Call ids repeat across runs of
one session (a replay numbers them per run), so the records of one key are kept in
file order and handed to the session's calls in the same order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.view.lines import Line, LineIndex

_HEAD = re.compile(
    rb'\{"time":"[^"\\]{0,64}","phase":"([a-z]{1,16})","turn":(-?\d{1,9}),"call_id":"((?:[^"\\]|\\.){0,256})"'
)


@dataclass(frozen=True)
class CallKey:
    phase: str
    turn: int
    call_id: str


_NONE = CallKey("", 0, "")


def _key(raw: bytes) -> CallKey:
    match = _HEAD.match(raw)
    if match is not None:
        call_id = match.group(3).decode("utf-8", "replace")
        if "\\" in call_id:
            call_id = json.loads(f'"{call_id}"')
        return CallKey(match.group(1).decode(), int(match.group(2)), call_id)
    try:
        record = json.loads(raw)
    except ValueError:
        return _NONE
    if not isinstance(record, dict) or not isinstance(record.get("tool"), str):
        return _NONE
    turn = record.get("turn")
    return CallKey(
        str(record.get("phase", "done")),
        turn if isinstance(turn, int) and not isinstance(turn, bool) else 0,
        str(record.get("call_id", "")),
    )


class TraceFile:
    """`<session id>.trace.jsonl`, indexed; absent is the same as empty."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index: LineIndex[CallKey] = LineIndex(path, _key)
        self._settled: tuple[int, dict[tuple[int, str], list[Line[CallKey]]]] = (0, {})

    def refresh(self) -> None:
        # a link is not followed: it could lead out of the folder the view was given
        if self.path.is_file() and not self.path.is_symlink():
            self.index.refresh()

    def calls(self) -> dict[tuple[int, str], list[Line[CallKey]]]:
        """Per `(turn, call_id)`, the settled record of each call with that key, in
        file order (a `started` record is replaced by the `done` that follows it)."""
        lines = self.index.lines
        if self._settled[0] == len(lines):
            return self._settled[1]
        calls: dict[tuple[int, str], list[Line[CallKey]]] = {}
        for line in lines:
            key = line.info
            if key is _NONE or not key.phase:
                continue
            found = calls.setdefault((key.turn, key.call_id), [])
            if found and found[-1].info.phase == "started":
                found[-1] = line  # its `done`, or a second `started` of a retry
            else:
                found.append(line)
        self._settled = (len(lines), calls)
        return calls

    def record(self, line: Line[CallKey]) -> dict[str, Any]:
        try:
            record = json.loads(self.index.read(line))
        except (ValueError, OSError):
            return {}
        return record if isinstance(record, dict) else {}
