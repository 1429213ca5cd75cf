"""The built-in tool table: schemas, prompt text, sets, and a cheap import."""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import pytest

from assembler.errors import ToolError
from assembler.tools.builtin.sets import BUILTIN_SETS, BUILTIN_TOOLS, resolve_builtin

ALL = ("read", "bash", "edit", "write", "grep", "find", "ls")


def test_the_seven_tools_and_the_plan_tool_are_there() -> None:
    assert set(BUILTIN_TOOLS) == {*ALL, "todo_write"}
    assert BUILTIN_SETS["all"] == ALL  # the workspace tools; the plan tool is asked for
    assert BUILTIN_SETS["todo"] == ("todo_write",)
    assert BUILTIN_SETS["coding"] == ("read", "bash", "edit", "write")
    assert BUILTIN_SETS["readonly"] == ("read", "grep", "find", "ls")


@pytest.mark.parametrize("name", (*ALL, "todo_write"))
def test_schema_and_prompt_text(name: str) -> None:
    tool = BUILTIN_TOOLS[name]
    params = dict(tool.parameters)
    jsonschema.Draft202012Validator.check_schema(params)
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert set(params["required"]) <= set(params["properties"])
    for prop in params["properties"].values():
        assert prop["description"]
    assert tool.name == name and tool.source == "builtin"
    assert tool.description and tool.snippet and "\n" not in tool.snippet
    assert tool.schema().parameters == tool.parameters


def test_edit_guideline() -> None:
    assert BUILTIN_TOOLS["edit"].guidelines == (
        "Use `read` before `edit`: `old_text` must match the file exactly, once.",
    )


def test_resolve_expands_sets_in_order_without_duplicates() -> None:
    names = [tool.name for tool in resolve_builtin(["grep", "coding", "read", "readonly"])]
    assert names == ["grep", "read", "bash", "edit", "write", "find", "ls"]
    assert [tool.name for tool in resolve_builtin(["all"])] == list(ALL)
    assert resolve_builtin([]) == ()


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(ToolError) as info:
        resolve_builtin(["read", "rm"])
    assert isinstance(info.value, KeyError)
    message = str(info.value)
    assert "'rm'" in message
    assert "read, write, edit, bash, grep, find, ls" in message
    assert "coding, readonly, all" in message


def test_import_is_cheap() -> None:
    code = (
        "import sys, assembler.tools.builtin.sets; "
        "heavy = {'asyncio', 'subprocess', 'jsonschema', 'jinja2', 'openai', 'anthropic'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
