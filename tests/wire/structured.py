"""Structured output on the wire: what OpenAI checks in `response_format`, and what
OpenAI-compatible servers do with it.

- `response_format_error`: the API's validation of a strict `json_schema` response
  format, worded as it answers (HTTP 400, `param: response_format`): every object
  sets `additionalProperties: false` and lists each property in `required`, and only
  the keywords of its "Supported schemas" appear. `OpenAIServer` applies it.
- `LlamaServerBefore` answers like llama.cpp's `llama-server` before it read the
  `json_schema` type (its `oaicompat` parser threw `response_format type must be one
  of "text" or "json_object", but got: json_schema`, an HTTP 400).
- `ignores_response_format` answers like llama-cpp-python, whose server reads only
  `{type: json_object, schema}` and drops the OpenAI `json_schema` envelope without a
  word: the model replies in prose; a forced tool is called.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from wire._server import ErrorReply, RecordedRequest, Reply
from wire.openai_server import OpenAIServer, ToolCallSpec, openai_error, stream

PERMITTED = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum",
        "const", "anyOf", "$ref", "$defs", "definitions", "description", "pattern",
        "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


def response_format_error(body: Any) -> ErrorReply | None:
    """OpenAI's answer to a request whose `response_format` it refuses (None: fine)."""
    fmt = body.get("response_format") if isinstance(body, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    wrapper = fmt.get("json_schema") or {}
    name = str(wrapper.get("name", ""))
    if not _NAME.match(name):
        return _refused(
            "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
    schema = wrapper.get("schema")
    if not wrapper.get("strict"):
        return None
    problem = _strict_problem(schema, ())
    if problem is None and isinstance(schema, dict) and schema.get("type") != "object":
        problem = "In context=(), schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{}\"'.".format(
            schema.get("type")
        )
    if problem is None:
        return None
    return _refused(f"Invalid schema for response_format '{name}': {problem}")


def _refused(message: str) -> ErrorReply:
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
    }
    return ErrorReply(400, body)


def _strict_problem(schema: Any, context: tuple[str, ...]) -> str | None:
    if not isinstance(schema, dict):
        return None
    where = f"In context={context!r}"
    for key in schema:
        if key not in PERMITTED:
            return f"{where}, '{key}' is not permitted."
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        if schema.get("additionalProperties") is not False:
            return f"{where}, 'additionalProperties' is required to be supplied and to be false."
        missing = [k for k in (properties or {}) if k not in (schema.get("required") or [])]
        if missing:
            return (
                f"{where}, 'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
    for key, value in (properties or {}).items():
        found = _strict_problem(value, (*context, "properties", key))
        if found:
            return found
    for keyword in ("items",):
        found = _strict_problem(schema.get(keyword), (*context, keyword))
        if found:
            return found
    for index, variant in enumerate(schema.get("anyOf") or []):
        found = _strict_problem(variant, (*context, "anyOf", str(index)))
        if found:
            return found
    for name, value in (schema.get("$defs") or {}).items():
        found = _strict_problem(value, (*context, "$defs", name))
        if found:
            return found
    return None


class StrictOpenAIServer(OpenAIServer):
    """The OpenAI loopback server with the API's `response_format` validation."""

    def check(self, body: Any) -> ErrorReply | None:
        return response_format_error(body) or super().check(body)


class LlamaServerBefore(OpenAIServer):
    """llama.cpp's server before it read `json_schema`: an HTTP 400 for it."""

    def check(self, body: Any) -> ErrorReply | None:
        fmt = body.get("response_format") if isinstance(body, dict) else None
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind and kind not in ("text", "json_object"):
            reply = openai_error(
                400,
                'response_format type must be one of "text" or "json_object", but got: '
                + str(kind),
                kind="invalid_request_error",
            )
            return ErrorReply(400, {"error": {"code": 400, **reply.body["error"]}})
        return super().check(body)


def ignores_response_format(
    answer: Mapping[str, Any], prose: str
) -> Callable[[RecordedRequest], Reply]:
    """A responder that answers like llama-cpp-python's server: `response_format` of
    type `json_schema` is dropped, so the model writes `prose`; a request that forces a
    tool gets a call of it with `answer` as its arguments."""

    def respond(request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            name = choice["function"]["name"]
            call = ToolCallSpec("call_forced_1", name, [json.dumps(answer)])
            return stream(tool_calls=[call])
        return stream(prose)

    return respond
