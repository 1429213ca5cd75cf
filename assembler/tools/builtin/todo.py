"""`todo_write`: the agent's plan, as a list the model rewrites whole.

The model keeps a short task list for work of several steps and sends all of it with
each call (as Claude Code's TodoWrite and pi's plan do): no ids to track, no partial
edits to merge, and the last call is the whole truth. The tool itself keeps nothing:
it checks the list and returns it in its result's `details` (as JSON, as the trace
and `run --json` write details); the runner turns a
successful call into a `PlanUpdated` event (`plan_of`), the agent records it in its
session file (a `plan` entry, so resume and load restore it), and the front ends show
it (ACP sends it as the editor's plan).

A wrong list (not a list, an unknown status, an empty item) is an error result the
model reads and corrects, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, get_args

from assembler.errors import ToolError
from assembler.text import json_type_name
from assembler.tools.arguments import guarded
from assembler.tools.base import Tool, ToolContext, ToolResult

TODO_TOOL_NAME: Final = "todo_write"

TodoStatus = Literal["pending", "in_progress", "completed"]
TodoPriority = Literal["high", "medium", "low"]
STATUSES: Final[tuple[str, ...]] = get_args(TodoStatus)
PRIORITIES: Final[tuple[str, ...]] = get_args(TodoPriority)
MAX_ITEMS: Final = 100
MAX_CONTENT_CHARS: Final = 500


@dataclass(frozen=True)
class TodoItem:
    """One task of the plan. `priority` defaults to medium (ACP requires one)."""

    content: str
    status: TodoStatus = "pending"
    priority: TodoPriority = "medium"

    def to_dict(self) -> dict[str, str]:
        return {"content": self.content, "status": self.status, "priority": self.priority}


def parse_items(value: object) -> tuple[TodoItem, ...]:
    """The items of a `todos` argument (or of a recorded `plan` entry); `ToolError`
    says what is wrong with the first bad one."""
    if not isinstance(value, list):
        raise ToolError(f"argument 'todos' must be a list of items, not {json_type_name(value)}")
    if len(value) > MAX_ITEMS:
        raise ToolError(f"argument 'todos' has {len(value)} items; at most {MAX_ITEMS}")
    return tuple(_item(index, raw) for index, raw in enumerate(value))


def _item(index: int, raw: object) -> TodoItem:
    where = f"todos[{index}]"
    if not isinstance(raw, Mapping):
        raise ToolError(f"{where} must be an object, not {json_type_name(raw)}")
    extra = sorted(str(key) for key in raw if key not in ("content", "status", "priority"))
    if extra:
        raise ToolError(
            f"{where} has unknown field(s) {', '.join(extra)}; fields: content, status, priority"
        )
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ToolError(f"{where}.content must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise ToolError(f"{where}.content is longer than {MAX_CONTENT_CHARS} characters")
    status = raw.get("status", "pending")
    if status not in STATUSES:
        raise ToolError(f"{where}.status must be one of {', '.join(STATUSES)}, not {status!r}")
    priority = raw.get("priority")
    if priority is None:
        priority = "medium"
    if priority not in PRIORITIES:
        raise ToolError(
            f"{where}.priority must be one of {', '.join(PRIORITIES)}, not {priority!r}"
        )
    return TodoItem(
        " ".join(content.split()), cast(TodoStatus, status), cast(TodoPriority, priority)
    )


def summary(items: Sequence[TodoItem]) -> str:
    """The confirmation the model reads: counts by status, and the task in progress."""
    if not items:
        return "The plan is now empty."
    counts = {status: sum(item.status == status for item in items) for status in STATUSES}
    parts = [f"{count} {status.replace('_', ' ')}" for status, count in counts.items() if count]
    text = f"Plan updated: {len(items)} item{'s' if len(items) != 1 else ''} ({', '.join(parts)})."
    current = [item.content for item in items if item.status == "in_progress"]
    return text + (f" In progress: {'; '.join(current)}." if current else "")


@guarded(TODO_TOOL_NAME, ("todos",))
async def _todo_write(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    if "todos" not in args:
        raise ToolError("missing required argument 'todos' (the whole list of items)")
    items = parse_items(args["todos"])
    return ToolResult(summary(items), details={"plan": [item.to_dict() for item in items]})


def plan_of(tool: Tool | None, result: ToolResult | None) -> tuple[TodoItem, ...] | None:
    """The plan a call set: the built-in `todo_write`'s successful result (a tool of
    the same name from an extension or a server sets nothing), else None."""
    if tool is None or tool.execute is not TODO_TOOL.execute or result is None:
        return None
    if result.is_error:
        return None
    try:
        return parse_items(result.details.get("plan"))
    except ToolError:
        return None


TODO_TOOL = Tool(
    name=TODO_TOOL_NAME,
    description=(
        "Write the plan for the current task: the WHOLE list of items each time (it "
        "replaces the previous list). Use it for work of three steps or more; keep "
        "exactly one item in_progress while you work, and mark items completed as soon "
        "as they are done. Send an empty list to clear the plan."
    ),
    parameters={
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "Every item of the plan, in order.",
                "maxItems": MAX_ITEMS,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {
                            "type": "string",
                            "description": "What the step does, in a few words.",
                        },
                        "status": {"type": "string", "enum": list(STATUSES)},
                        "priority": {"type": "string", "enum": list(PRIORITIES)},
                    },
                    "required": ["content", "status"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["todos"],
        "additionalProperties": False,
    },
    execute=_todo_write,
    snippet="Write the task plan (the whole list each time)",
    guidelines=(
        "For a task of several steps, write the plan with `todo_write` first and keep it "
        "current as you work.",
    ),
)
