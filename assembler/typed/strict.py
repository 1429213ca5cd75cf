"""The form of an output schema that OpenAI's strict structured output accepts, if any.

Strict mode (`response_format: {type: json_schema, strict: true}`) constrains
decoding to a subset of JSON Schema: every object lists all its properties in
`required` and sets `additionalProperties: false`, and only some keywords are known
(OpenAI's "Supported schemas"). `strict_schema` rewrites a schema into that form only
where the rewrite accepts a subset of what the schema accepts, so whatever the model
produces under strict mode still validates against the user's schema:

- `additionalProperties: false` is added to an object that lists its properties
  (extra keys are refused: a subset);
- every property becomes required (an answer always has them: a subset);
- annotations (`default`, `examples`, `$comment`, ...) are left out (they do not
  change what is valid).

Anything else strict mode cannot take (`minLength`, `allOf`, `oneOf`, `not`,
`patternProperties`, a free-form object or map, a `$ref` with siblings, an unlisted
`format`) makes it return None: the run then asks for the answer through the
`final_answer` tool, where the schema goes as written and our own validation (with
retries) enforces all of it. Dropping the constraint instead would let strict mode
produce answers the schema refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Keywords strict mode takes, as they are.
_KEPT = frozenset(
    {
        "type",
        "enum",
        "const",
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
#: Annotations: they change nothing that validates, so they are left out.
_DROPPED = frozenset(
    {"default", "examples", "title", "$comment", "$schema", "deprecated", "readOnly", "writeOnly"}
)
#: Keywords handled below (their values hold schemas).
_STRUCTURE = frozenset(
    {"properties", "required", "additionalProperties", "items", "anyOf", "$ref", "$defs"}
)
#: String formats strict mode knows.
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


class _NotStrict(Exception):
    """The schema uses something strict mode cannot take as a subset."""


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """`schema` in the form strict mode takes, or None when it has none (see the module
    docstring). The root must be an object schema that lists its properties."""
    if schema.get("type") != "object" or "anyOf" in schema:
        return None
    try:
        return _node(schema)
    except (_NotStrict, RecursionError):
        return None


def _node(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise _NotStrict("a boolean schema")
    unknown = set(schema) - _KEPT - _DROPPED - _STRUCTURE
    if unknown:
        raise _NotStrict(f"keywords {sorted(unknown)}")
    if "$ref" in schema:
        reference = schema["$ref"]
        if set(schema) - _DROPPED - {"$ref", "description"}:
            raise _NotStrict("a $ref with sibling keywords")
        if not (
            isinstance(reference, str) and (reference == "#" or reference.startswith("#/$defs/"))
        ):
            raise _NotStrict(f"the reference {reference!r}")
        return {"$ref": reference}
    fmt = schema.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise _NotStrict(f"the format {fmt!r}")
    out: dict[str, Any] = {k: v for k, v in schema.items() if k in _KEPT}
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if "properties" in schema or is_object:
        properties = schema.get("properties")
        extra = schema.get("additionalProperties", False)
        if not isinstance(properties, Mapping) or not properties or extra not in (True, False):
            raise _NotStrict("an object without listed properties (a map)")
        out["properties"] = {name: _node(value) for name, value in properties.items()}
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if "items" in schema:
        out["items"] = _node(schema["items"])
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise _NotStrict("an empty anyOf")
        out["anyOf"] = [_node(variant) for variant in variants]
    if "$defs" in schema:
        definitions = schema["$defs"]
        if not isinstance(definitions, Mapping):
            raise _NotStrict("$defs that is not an object")
        out["$defs"] = {name: _node(value) for name, value in definitions.items()}
    return out
