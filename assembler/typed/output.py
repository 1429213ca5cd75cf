"""An agent's typed result: the schema its run must end with, compiled once per agent.

`OutputContract` is built when the agent is built (never per turn) and read by the
runner at the end of each run. It knows three forms of the schema:

- `schema`, the user's, against which every answer is validated;
- `wire_schema`, what a model is asked for: the schema itself when its root is an
  object, else `{value: <schema>}` (tool arguments and OpenAI's structured output both
  need an object at the root), unwrapped again when an answer arrives;
- `strict_schema`, the form OpenAI's strict structured output takes, or None
  (`typed.strict`).

An answer arrives as a `final_answer` tool call or, with native structured output, as
the reply's text. Either way it is size-checked (`MAX_OUTPUT_BYTES`: a 10 MB answer
is refused with a clear error before it is parsed), parsed and validated; the verdict
lists every error, worded for the model that must fix them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assembler.frozen import thaw
from assembler.messages import OutputRequest, ToolSchema
from assembler.typed.schemas import compile_schema, value_errors
from assembler.typed.strict import strict_schema

OUTPUT_TOOL = "final_answer"
"""The tool a model calls with its answer (where no native structured output is used)."""

MAX_OUTPUT_BYTES = 4 * 1024 * 1024
"""The largest answer accepted: four MiB of JSON is past any model's output, and past
what validation, the session file and a pipe should carry per run."""

WRAPPER = "value"
"""The property a non-object answer is wrapped in (`{"value": ...}`)."""

NOT_JSON = "the reply is not JSON"
"""How the verdict on a reply that does not parse begins."""

_FENCED = re.compile(r"\A\s*```(?:json)?[ \t]*\n(.*)\n```\s*\Z", re.S)


@dataclass(frozen=True)
class Verdict:
    """One answer, judged: the value when it is valid, else the errors (none: valid)."""

    value: Any = None
    errors: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.errors


class OutputContract:
    """The output schema of one agent, compiled; see the module docstring."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        retries: int = 2,
        description: str = "",
        tool: str = OUTPUT_TOOL,
    ) -> None:
        self.schema = schema
        self.retries = retries
        self.tool = tool
        self.wrapped = schema.get("type") != "object"
        self.wire_schema: Mapping[str, Any] = (
            {
                "type": "object",
                "properties": {WRAPPER: dict(schema)},
                "required": [WRAPPER],
                "additionalProperties": False,
            }
            if self.wrapped
            else schema
        )
        self.strict_schema = strict_schema(self.wire_schema)
        self.description = description or (
            "Give your final answer: call this once, with the answer as the arguments, when "
            "the work is done. The run ends when the answer is valid; if it is not, you are "
            "told what is wrong and may call it again."
        )
        self._validator = compile_schema(schema)

    def tool_schema(self) -> ToolSchema:
        """The `final_answer` tool, as the model sees it."""
        return ToolSchema(self.tool, self.description, self.wire_schema)

    def request(self, *, native: bool = True) -> OutputRequest:
        return OutputRequest(self.tool, self.wire_schema, self.strict_schema, native)

    def check(self, value: Any) -> Verdict:
        """`value` (already unwrapped) against the schema."""
        errors = value_errors(self._validator, value)
        return Verdict(None, tuple(errors)) if errors else Verdict(value)

    def from_arguments(
        self, arguments: Mapping[str, Any] | None, *, raw: str = "", problem: str = ""
    ) -> Verdict:
        """An answer given as `final_answer`'s arguments (None when they were not a
        JSON object: `problem` says why); `raw` is their text as the model sent it
        (measured instead of serialising them again). The value is a plain copy: the
        caller may change it without changing the conversation."""
        if arguments is None:
            return Verdict(None, (problem or "the arguments are not a JSON object",))
        size = len(raw.encode("utf-8", "surrogatepass")) if raw else _size(arguments)
        if size > MAX_OUTPUT_BYTES:
            return Verdict(None, (_too_large(size),))
        return self._unwrap(thaw(arguments))

    def from_text(self, text: str) -> Verdict:
        """An answer given as the reply's text (native structured output): JSON, or one
        fenced ```json block holding it (what servers that ignore the format send)."""
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_OUTPUT_BYTES:
            return Verdict(None, (_too_large(size),))
        fenced = _FENCED.match(text)
        try:
            value = json.loads(fenced.group(1) if fenced else text)
        except ValueError as e:
            shown = text.strip()[:80] or "(empty)"
            return Verdict(None, (f"{NOT_JSON} ({e}); it begins: {shown}",))
        if not isinstance(value, dict):
            return Verdict(None, ("the reply must be a JSON object",))
        return self._unwrap(value)

    def _unwrap(self, answer: dict[str, Any]) -> Verdict:
        if not self.wrapped:
            return self.check(answer)
        if set(answer) != {WRAPPER}:
            return Verdict(None, (f'the answer must be an object with one key, "{WRAPPER}"',))
        return self.check(answer[WRAPPER])


def _size(value: Any) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return 0


def _too_large(size: int) -> str:
    return (
        f"the answer is {size / (1024 * 1024):.1f} MiB of JSON; an answer may be at most "
        f"{MAX_OUTPUT_BYTES // (1024 * 1024)} MiB: give a shorter one"
    )
