"""A replay script as data: read and checked without the provider.

A script is a list of steps, each one assistant reply:

    - text: "Let me look."
      tool_calls:
        - {name: read, arguments: {path: README.md}}
    - text: "It is a README."

A step may also carry `id` (a label shown in errors), `usage`
(`{input_tokens, output_tokens}`), `reasoning` (text streamed as the model's reasoning
before the reply, never part of the answer), and a tool call its own `id`; `arguments` given as a
string is taken as the model's raw text, so a script can replay malformed JSON.

This module needs no event loop and no provider code, so `assemble validate` checks
a manifest's `scripted:` replay with the very reading `run` does, at its start-up
cost: `check_script` reads and checks every step as `load_script` does, and only
`load_script` builds the steps' messages (the conversation types, which a check does
not need, are imported then). `assembler.providers.scripted` replays the steps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from assembler.errors import Issue, ManifestError
from assembler.manifest.yaml_source import (
    JsonPath,
    SourceMap,
    format_path,
    load_yaml_text,
    read_manifest_text,
)

if TYPE_CHECKING:
    from assembler.messages import AssistantMessage, ToolCall, Usage

__all__ = ["ScriptStep", "check_script", "load_script", "parse_steps"]

EMPTY = "the script is empty"
WHAT_A_SCRIPT_IS = "a script must be a list of steps (text / tool_calls)"
_STEP_KEYS = ("text", "tool_calls", "id", "usage", "reasoning")
_CALL_KEYS = ("name", "arguments", "id")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _no_usage() -> Usage:
    # imported here: see the module's docstring (a check builds no step)
    from assembler.messages import Usage

    return Usage()


@dataclass(frozen=True)
class ScriptStep:
    """One scripted reply, validated."""

    message: AssistantMessage
    label: str = ""
    usage: Usage = field(default_factory=_no_usage)

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


class _Call(NamedTuple):
    """A tool call as checked: `arguments` is a mapping, or the model's raw text."""

    id: str
    name: str
    arguments: Mapping[str, Any] | str


class _Reply(NamedTuple):
    """A step as checked, before it is built into a `ScriptStep`."""

    text: str
    reasoning: str
    label: str
    calls: tuple[_Call, ...]
    usage: Mapping[str, int] | None


def load_script(path: str | Path, display: str | None = None) -> list[ScriptStep]:
    """Read and validate a YAML script; `ManifestError` names the file, and the line
    and column of every problem. Read by the manifests' safe YAML rules, so
    `assemble validate` (which calls `check_script`, the same reading) accepts
    exactly the scripts a run does."""
    return [_built(reply) for reply in _read_script(path, display)]


def check_script(path: str | Path, display: str | None = None) -> None:
    """Raise the `ManifestError` `load_script` would raise for this script, if any,
    without building its steps (what `validate` and `render --dry-run` call)."""
    _read_script(path, display)


def _read_script(path: str | Path, display: str | None) -> list[_Reply | ScriptStep]:
    file = display or str(path)
    text = read_manifest_text(Path(path), file)
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        raise ManifestError([Issue(file=file, message=f"{EMPTY}; {WHAT_A_SCRIPT_IS}")])
    document = load_yaml_text(text, file)
    raw: object = document.data
    at: JsonPath = ()
    if isinstance(raw, Mapping) and set(raw) == {"steps"}:
        raw, at = raw["steps"], ("steps",)
    return _checked_steps(raw, source=file, where=at, source_map=document.source)


def parse_steps(
    raw: object,
    *,
    source: str = "<steps>",
    where: JsonPath = (),
    source_map: SourceMap | None = None,
) -> list[ScriptStep]:
    """Validate steps given as data; every problem is reported at once (at its line
    and column when `source_map` says where `raw`, at JSON path `where`, came from)."""
    return [
        _built(step)
        for step in _checked_steps(raw, source=source, where=where, source_map=source_map)
    ]


def _checked_steps(
    raw: object, *, source: str, where: JsonPath, source_map: SourceMap | None
) -> list[_Reply | ScriptStep]:
    def issue(path: JsonPath, message: str) -> Issue:
        if source_map is not None:
            return source_map.issue((*where, *path), message)
        return Issue(file=source, message=message, path=format_path(path))

    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Iterable):
        raise ManifestError([issue((), WHAT_A_SCRIPT_IS)])
    issues: list[Issue] = []
    steps = []
    for index, item in enumerate(raw):

        def problem(message: str, path: JsonPath = (), index: int = index) -> None:
            issues.append(issue((index, *path), f"step {index + 1}: {message}"))

        steps.append(_checked_step(item, problem))
    if issues:
        raise ManifestError(issues)
    return steps


Problem = Callable[[str, JsonPath], None]
"""Records a problem of one step, at a JSON path inside the step."""

_NO_REPLY = _Reply("", "", "", (), None)


def _checked_step(item: object, problem: Problem) -> _Reply | ScriptStep:
    if isinstance(item, ScriptStep):
        return item
    if isinstance(item, str):
        return _NO_REPLY._replace(text=item)
    if not isinstance(item, Mapping):
        # imported here: only steps given in code can be messages (see the docstring)
        from assembler.messages import AssistantMessage

        if isinstance(item, AssistantMessage):
            return ScriptStep(item)
        problem("must be a mapping with `text` and/or `tool_calls`", ())
        return _NO_REPLY
    unknown = [k for k in item if k not in _STEP_KEYS]
    if unknown:
        names = ", ".join(sorted(map(str, unknown)))
        problem(f"unknown key(s) {names}; allowed: {', '.join(_STEP_KEYS)}", (str(unknown[0]),))
    if "text" not in item and "tool_calls" not in item:
        problem("needs `text`, `tool_calls`, or both", ())
    text = item.get("text", "")
    if not isinstance(text, str):
        problem("`text` must be a string", ("text",))
        text = ""
    reasoning = item.get("reasoning", "")
    if not isinstance(reasoning, str):
        problem("`reasoning` must be a string", ("reasoning",))
        reasoning = ""
    label = item.get("id", "")
    if not isinstance(label, str | int):
        problem("`id` must be a string", ("id",))
        label = ""
    raw_calls = item.get("tool_calls") or []
    calls: list[_Call] = []
    if not isinstance(raw_calls, list):
        problem("`tool_calls` must be a list", ("tool_calls",))
    else:
        for j, raw_call in enumerate(raw_calls):
            call = _checked_call(raw_call, ("tool_calls", j), problem)
            if call is not None:
                calls.append(call)
    usage: Mapping[str, int] | None = None
    raw_usage = item.get("usage")
    if raw_usage is not None:
        if (
            isinstance(raw_usage, Mapping)
            and set(raw_usage) <= set(_USAGE_KEYS)
            and all(isinstance(raw_usage.get(k, 0), int) for k in _USAGE_KEYS)
        ):
            usage = {k: raw_usage.get(k, 0) for k in _USAGE_KEYS}
        else:
            problem(
                "`usage` must be {input_tokens: int, output_tokens: int} "
                "(optionally cache_read_tokens, cache_write_tokens)",
                ("usage",),
            )
    return _Reply(text, reasoning, str(label), tuple(calls), usage)


def _checked_call(raw: object, where: JsonPath, problem: Problem) -> _Call | None:
    if not isinstance(raw, Mapping):
        problem("a tool call must be a mapping with `name` and `arguments`", where)
        return None
    unknown = [k for k in raw if k not in _CALL_KEYS]
    if unknown:
        names = ", ".join(sorted(map(str, unknown)))
        problem(
            f"unknown key(s) {names}; allowed: {', '.join(_CALL_KEYS)}", (*where, str(unknown[0]))
        )
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        problem("a tool call needs a `name` (a non-empty string)", (*where, "name"))
        return None
    call_id = raw.get("id", "")
    if not isinstance(call_id, str):
        problem("a tool call `id` must be a string", (*where, "id"))
        call_id = ""
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, str | Mapping):
        problem("`arguments` must be a mapping (or a string of raw JSON)", (*where, "arguments"))
        return None
    return _Call(call_id, name, arguments)


def _built(step: _Reply | ScriptStep) -> ScriptStep:
    """The step of a reply that passed its checks (building cannot fail)."""
    if isinstance(step, ScriptStep):
        return step
    from assembler.messages import AssistantMessage, Reasoning, Usage

    thought = (Reasoning(kind="text", text=step.reasoning),) if step.reasoning else ()
    message = AssistantMessage(
        text=step.text, tool_calls=tuple(_built_call(c) for c in step.calls), reasoning=thought
    )
    usage = Usage(**step.usage) if step.usage is not None else Usage()
    return ScriptStep(message, step.label, usage)


def _built_call(call: _Call) -> ToolCall:
    if isinstance(call.arguments, str):
        # Imported here for start-up cost: only a script replaying raw argument text
        # needs the providers' parsing of it.
        from assembler.providers._common import tool_call_from_raw

        return tool_call_from_raw(call.id, call.name, call.arguments)
    from assembler.messages import ToolCall, to_plain

    plain = to_plain(call.arguments)
    return ToolCall(call.id, call.name, plain, raw_arguments=json.dumps(plain, ensure_ascii=False))
