"""The eval file's JSON Schema (`eval.schema.json`, published beside the agent's) and
its compiled validators, made once per process."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from assembler.python_source import building_syntax_trees

SCHEMA_RESOURCE = "eval.schema.json"


@cache
def eval_schema_text() -> str:
    """The schema exactly as published."""
    return resources.files("assembler.schemas").joinpath(SCHEMA_RESOURCE).read_text("utf-8")


@cache
def eval_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(eval_schema_text())
    return loaded


@cache
def file_validator() -> Any:
    """For a whole eval file."""
    with building_syntax_trees():  # its first import parses Python: see python_source
        from jsonschema import Draft202012Validator

    return Draft202012Validator(eval_schema())


@cache
def task_validator() -> Any:
    """For one task object, as a line of a `tasks_file` holds it (`id` optional)."""
    with building_syntax_trees():  # its first import parses Python: see python_source
        from jsonschema import Draft202012Validator

    return Draft202012Validator({"$defs": eval_schema()["$defs"], "$ref": "#/$defs/task"})
