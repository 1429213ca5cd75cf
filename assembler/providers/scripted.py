"""A provider that replays a script of replies: deterministic runs without a model.

Used by `--model scripted:...` with `options.script` (a YAML file) for demos, CI and
bug reports, and by `assembler.testing` for users' own tests. A script is a list of
steps, each one assistant reply:

    - text: "Let me look."
      tool_calls:
        - {name: read, arguments: {path: README.md}}
    - text: "It is a README."

A step may also carry `id` (a label shown in errors), `usage`
(`{input_tokens, output_tokens}`), and a tool call its own `id`; `arguments` given as a
string is taken as the model's raw text, so a script can replay malformed JSON.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from assembler.errors import Issue, ManifestError, ProviderError
from assembler.messages import (
    AssistantMessage,
    ModelRequest,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from assembler.providers._common import to_plain, tool_call_from_raw
from assembler.safe_read import FileRefused, read_small_text

__all__ = [
    "MAX_SCRIPT_BYTES",
    "ScriptStep",
    "ScriptedProvider",
    "Step",
    "load_script",
    "parse_steps",
    "split_text",
    "stream_reply",
]

Step = Mapping[str, Any] | AssistantMessage | str
"""A step as written: a mapping like the YAML form, an `AssistantMessage`, or bare text."""

MAX_SCRIPT_BYTES = 16 * 1024 * 1024
"""The largest replay script read: thousands of replies, each with its tool calls."""

_STEP_KEYS = ("text", "tool_calls", "id", "usage")
_CALL_KEYS = ("name", "arguments", "id")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class ScriptStep:
    """One scripted reply, validated."""

    message: AssistantMessage
    label: str = ""
    usage: Usage = field(default_factory=Usage)

    def describe(self) -> str:
        """A short summary for error messages: `text 'Hello' + read(...)`."""
        parts: list[str] = []
        if self.message.text:
            snippet = (
                self.message.text
                if len(self.message.text) <= 40
                else (self.message.text[:39] + "…")
            )
            parts.append(f"text {snippet!r}")
        parts.extend(f"{call.name}(...)" for call in self.message.tool_calls)
        body = " + ".join(parts) or "empty reply"
        return f"[{self.label}] {body}" if self.label else body


def load_script(path: str | Path) -> list[ScriptStep]:
    """Read and validate a YAML script; `ManifestError` names the file and the step.

    The file comes from the project, so it is read like any file a manifest names: a
    regular file (a FIFO would block, `/dev/zero` never end) of at most
    `MAX_SCRIPT_BYTES`, checked before it is read."""
    file = str(path)
    try:
        text = read_small_text(Path(path), MAX_SCRIPT_BYTES)
    except FileRefused as e:
        raise ManifestError([Issue(file=file, message=f"cannot read script: {e}")]) from e
    except OSError as e:
        reason = e.strerror or str(e)
        raise ManifestError([Issue(file=file, message=f"cannot read script: {reason}")]) from e
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        problem = getattr(e, "problem", None) or str(e)
        raise ManifestError(
            [Issue(file=file, line=line, column=column, message=f"invalid YAML: {problem}")]
        ) from e
    if isinstance(raw, Mapping) and set(raw) == {"steps"}:
        raw = raw["steps"]
    return parse_steps(raw, source=file)


def parse_steps(raw: object, *, source: str = "<steps>") -> list[ScriptStep]:
    """Validate steps given as data; every problem is reported at once."""
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Iterable):
        raise ManifestError(
            [Issue(file=source, message="a script must be a list of steps (text / tool_calls)")]
        )
    issues: list[Issue] = []
    steps = [_parse_step(item, i, source, issues) for i, item in enumerate(raw)]
    if issues:
        raise ManifestError(issues)
    return steps


def _parse_step(item: object, index: int, source: str, issues: list[Issue]) -> ScriptStep:
    where = f"[{index}]"

    def problem(message: str, path: str = "") -> None:
        issues.append(Issue(file=source, message=f"step {index + 1}: {message}", path=where + path))

    if isinstance(item, ScriptStep):
        return item
    if isinstance(item, AssistantMessage):
        return ScriptStep(item)
    if isinstance(item, str):
        return ScriptStep(AssistantMessage(text=item))
    if not isinstance(item, Mapping):
        problem("must be a mapping with `text` and/or `tool_calls`")
        return ScriptStep(AssistantMessage())
    unknown = sorted(str(k) for k in item if k not in _STEP_KEYS)
    if unknown:
        problem(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_STEP_KEYS)}")
    if "text" not in item and "tool_calls" not in item:
        problem("needs `text`, `tool_calls`, or both")
    text = item.get("text", "")
    if not isinstance(text, str):
        problem("`text` must be a string", ".text")
        text = ""
    label = item.get("id", "")
    if not isinstance(label, str | int):
        problem("`id` must be a string", ".id")
        label = ""
    raw_calls = item.get("tool_calls") or []
    calls: list[ToolCall] = []
    if not isinstance(raw_calls, list):
        problem("`tool_calls` must be a list", ".tool_calls")
    else:
        for j, raw_call in enumerate(raw_calls):
            call = _parse_call(raw_call, f".tool_calls[{j}]", problem)
            if call is not None:
                calls.append(call)
    usage = Usage()
    raw_usage = item.get("usage")
    if raw_usage is not None:
        if (
            isinstance(raw_usage, Mapping)
            and set(raw_usage) <= set(_USAGE_KEYS)
            and all(isinstance(raw_usage.get(k, 0), int) for k in _USAGE_KEYS)
        ):
            usage = Usage(**{k: raw_usage.get(k, 0) for k in _USAGE_KEYS})
        else:
            problem(
                "`usage` must be {input_tokens: int, output_tokens: int} "
                "(optionally cache_read_tokens, cache_write_tokens)",
                ".usage",
            )
    return ScriptStep(AssistantMessage(text=text, tool_calls=tuple(calls)), str(label), usage)


def _parse_call(raw: object, where: str, problem: Callable[[str, str], None]) -> ToolCall | None:
    if not isinstance(raw, Mapping):
        problem("a tool call must be a mapping with `name` and `arguments`", where)
        return None
    unknown = sorted(str(k) for k in raw if k not in _CALL_KEYS)
    if unknown:
        problem(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_CALL_KEYS)}", where)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        problem("a tool call needs a `name` (a non-empty string)", where + ".name")
        return None
    call_id = raw.get("id", "")
    if not isinstance(call_id, str):
        problem("a tool call `id` must be a string", where + ".id")
        call_id = ""
    arguments = raw.get("arguments", {})
    if isinstance(arguments, str):
        return tool_call_from_raw(call_id, name, arguments)
    if not isinstance(arguments, Mapping):
        problem("`arguments` must be a mapping (or a string of raw JSON)", where + ".arguments")
        return None
    plain = to_plain(arguments)
    return ToolCall(call_id, name, plain, raw_arguments=json.dumps(plain, ensure_ascii=False))


def split_text(text: str, parts: int = 3) -> list[str]:
    """Split text at word boundaries into at most `parts` deltas, as a stream would."""
    words = re.findall(r"\s*\S+\s*|\s+", text)
    if len(words) <= 1:
        return [text] if text else []
    size = -(-len(words) // parts)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


async def stream_reply(
    message: AssistantMessage, usage: Usage | None = None, *, reply_number: int = 1
) -> AsyncIterator[StreamEvent]:
    """Stream a finished reply like a provider: a few text deltas, then `ResponseDone`.

    Tool calls without an id get `call_<reply>_<n>`, so ids are unique and stable.
    """
    calls = tuple(
        call if call.id else replace(call, id=f"call_{reply_number}_{n}")
        for n, call in enumerate(message.tool_calls, start=1)
    )
    for piece in split_text(message.text):
        await asyncio.sleep(0)
        yield TextDelta(piece)
    stop = "tool_calls" if calls else "stop"
    yield ResponseDone(
        message=replace(message, tool_calls=calls), usage=usage or Usage(), stop_reason=stop
    )


class ScriptedProvider:
    """Replays scripted replies in order; one more request than scripted is an error.

    Every request is kept in `requests`, so a caller can check what the model was sent.
    """

    def __init__(self, steps: Iterable[Step | ScriptStep], *, name: str = "scripted") -> None:
        self._name = name
        self._steps = parse_steps(list(steps))
        self._used = 0
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def replies(self) -> int:
        """How many steps have been replayed."""
        return self._used

    @property
    def remaining(self) -> tuple[ScriptStep, ...]:
        """The steps not replayed yet."""
        return tuple(self._steps[self._used :])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if self._used >= len(self._steps):
            raise ProviderError(
                f"{self._name}: script exhausted after {len(self._steps)} replies "
                f"(request {len(self.requests)} has no scripted reply)"
            )
        step = self._steps[self._used]
        self._used += 1
        async for event in stream_reply(step.message, step.usage, reply_number=self._used):
            yield event

    async def aclose(self) -> None:
        return None
