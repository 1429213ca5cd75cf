"""Sample values of parameters, for rendering a template once at validate time.

A section template that names parameters is rendered with these (a default where
there is one, else the first `enum` value, `const`, the first example, or a plain
value of the declared type), so `validate` catches a template that fails on any
value; a failure may be the sample's, which is why it is only a warning there.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

_BY_TYPE: Mapping[str, Any] = {
    "string": "example",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def sample_value(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return "example"
    for key in ("default", "const"):
        if key in schema:
            return copy.deepcopy(schema[key])
    for key in ("enum", "examples"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return copy.deepcopy(values[0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind in ("integer", "number") and isinstance(schema.get("minimum"), int | float):
        return schema["minimum"]
    return copy.deepcopy(_BY_TYPE.get(kind, "example")) if isinstance(kind, str) else "example"


def sample_values(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A sample value for each parameter (name -> schema)."""
    return {name: sample_value(schema) for name, schema in parameters.items()}
