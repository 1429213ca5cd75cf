"""The agent's plan in its session file: a `plan` entry per `todo_write` call.

Each entry holds the whole list (`{"entries": [{content, status, priority}, ...]}`),
as the tool takes it, so the plan of a session is the last `plan` entry on its branch:
resume and load restore it, a fork from an earlier entry gets the plan as it was
there, and a compaction (which drops messages, not entries) keeps it. An entry that
does not read as a plan (an edited file) is skipped, as readers skip what they do
not know.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from assembler.errors import ToolError
from assembler.sessions.store import Session
from assembler.tools.builtin.todo import TodoItem, parse_items

PLAN_ENTRY: Final = "plan"


def record_plan(session: Session, items: Sequence[TodoItem]) -> None:
    """Append the plan `items` as the session's current one."""
    session.append(PLAN_ENTRY, {"entries": [item.to_dict() for item in items]})


def recorded_plan(session: Session) -> tuple[TodoItem, ...]:
    """The plan along the session's branch to its leaf (empty when it has none)."""
    if session.leaf is None:
        return ()
    for entry in reversed(session.branch()):
        if entry.type != PLAN_ENTRY:
            continue
        try:
            return parse_items(entry.payload.get("entries"))
        except ToolError:
            continue
    return ()
