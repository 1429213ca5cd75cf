"""The agent's plan (`todo_write`) as the editor's plan: a `session/update` with
`sessionUpdate: "plan"` and every entry (content, priority, status).

ACP's plan is replaced whole by each update, as `todo_write` replaces its list, so
one call is one update; an empty list clears the editor's plan. A session resumed or
loaded with a plan sends it once it is open, so the editor shows where the work
stands.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp import plan_entry, update_plan
from acp.schema import AgentPlanUpdate

from assembler.tools.builtin.todo import TodoItem


def plan_update(items: Sequence[TodoItem]) -> AgentPlanUpdate:
    """The update showing `items` as the session's plan."""
    return update_plan(
        plan_entry(item.content, priority=item.priority, status=item.status) for item in items
    )
