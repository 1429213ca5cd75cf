"""`todo_write` (issue 27): the whole plan each call, checked; a wrong list is an error
result the model reads, never an exception."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.sets import BUILTIN_TOOLS, resolve_builtin
from assembler.tools.builtin.todo import TODO_TOOL, TodoItem, parse_items, plan_of, summary


def write(tmp_path: Path, args: Any) -> ToolResult:
    return asyncio.run(TODO_TOOL.execute(args, ToolContext(workspace=tmp_path)))


def test_the_todo_set_is_the_one_tool_and_all_does_not_include_it() -> None:
    assert resolve_builtin(["todo"]) == (TODO_TOOL,)
    assert BUILTIN_TOOLS["todo_write"] is TODO_TOOL
    assert TODO_TOOL not in resolve_builtin(["all"])
    jsonschema.Draft202012Validator.check_schema(dict(TODO_TOOL.parameters))


def test_a_list_is_the_plan_in_its_details(tmp_path: Path) -> None:
    result = write(
        tmp_path,
        {
            "todos": [
                {"content": "Read  the\ttests", "status": "completed"},
                {"content": "Fix the fee", "status": "in_progress", "priority": "high"},
                {"content": "Run the tests", "status": "pending", "priority": None},
            ]
        },
    )
    assert not result.is_error
    assert plan_of(TODO_TOOL, result) == (
        TodoItem("Read the tests", "completed", "medium"),
        TodoItem("Fix the fee", "in_progress", "high"),
        TodoItem("Run the tests", "pending", "medium"),
    )
    assert result.details["plan"][1] == {
        "content": "Fix the fee",
        "status": "in_progress",
        "priority": "high",
    }
    assert result.content == (
        "Plan updated: 3 items (1 pending, 1 in progress, 1 completed). In progress: Fix the fee."
    )


def test_an_empty_list_clears_the_plan(tmp_path: Path) -> None:
    result = write(tmp_path, {"todos": []})
    assert (result.is_error, result.content, result.details["plan"]) == (
        False,
        "The plan is now empty.",
        [],
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"todos": "read, fix"}, "argument 'todos' must be a list of items, not a string"),
        ({"todos": {"content": "x"}}, "argument 'todos' must be a list of items, not an object"),
        ({}, "missing required argument 'todos'"),
        ({"todos": [], "plan": []}, "todo_write: unknown argument(s) plan; allowed: todos"),
        ({"todos": ["fix it"]}, "todos[0] must be an object, not a string"),
        (
            {"todos": [{"content": "a", "status": "done"}]},
            "todos[0].status must be one of pending, in_progress, completed, not 'done'",
        ),
        (
            {"todos": [{"content": "a", "status": "pending", "priority": "urgent"}]},
            "todos[0].priority must be one of high, medium, low, not 'urgent'",
        ),
        (
            {"todos": [{"content": "  ", "status": "pending"}]},
            "todos[0].content must be a non-empty",
        ),
        ({"todos": [{"content": 3, "status": "pending"}]}, "todos[0].content must be a non-empty"),
        (
            {"todos": [{"content": "a", "status": "pending", "id": 1}]},
            "todos[0] has unknown field(s) id",
        ),
        ({"todos": [{"content": "a"}] * 101}, "has 101 items; at most 100"),
        ({"todos": [{"content": "a" * 501}]}, "longer than 500 characters"),
    ],
)
def test_a_wrong_list_is_an_error_result(tmp_path: Path, args: Any, message: str) -> None:
    result = write(tmp_path, args)
    assert result.is_error
    assert message in result.content
    assert "plan" not in result.details


def test_only_the_built_in_tools_successful_result_sets_a_plan() -> None:
    items = (TodoItem("a"),)
    done = ToolResult("ok", details={"plan": [items[0].to_dict()]})
    assert plan_of(TODO_TOOL, done) == items
    assert plan_of(TODO_TOOL, ToolResult("no", is_error=True, details={"plan": items})) is None
    assert plan_of(TODO_TOOL, None) is None
    assert plan_of(TODO_TOOL, ToolResult("rewritten", details={"plan": "?"})) is None
    assert plan_of(None, done) is None
    lookalike = Tool("todo_write", "mine", TODO_TOOL.parameters, TODO_TOOL.execute.__wrapped__)  # type: ignore[attr-defined]
    assert plan_of(lookalike, done) is None


def test_recorded_items_read_back_with_the_same_checks() -> None:
    assert parse_items([{"content": "a", "status": "completed", "priority": "low"}]) == (
        TodoItem("a", "completed", "low"),
    )
    assert summary([TodoItem("a")]) == "Plan updated: 1 item (1 pending)."
