"""What the agent would send, against what the session recorded: one request at a time,
each difference named by where it is.

The parts of a request are compared in the order the model reads them: the system
prompt section by section (as `render` splits it), the tool schemas, the model
settings, the messages the previous request did not carry (tool results, the user's
messages, context), and last the tools the recorded reply is about to call. Each
difference is one `Divergence` whose message locates it:

    turn 3: section `tools` changed: + `- grep: Search files`
    turn 1: tool schema `edit` changed: description
    turn 2: tool `read` result differs (workspace file `shipping/fees.py`): ...
    turn 4: permission rule `edit(tests/**)` now blocks call 3
    turn 4: the replay called `write`, which the agent no longer has

Both sides are normalised first (`texts.Normalizer`), so a moved workspace, a test
runner's timing or a scrubbed secret is not a difference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from assembler.agent.prompt_record import settings_record
from assembler.messages import ModelRequest
from assembler.regress.expected import MessageRecord, PromptRecord, StepRecord
from assembler.regress.records import message_role, message_text, request_tools
from assembler.regress.texts import TextRecord, first_change, first_line

Normalize = Callable[[str], str]

DENIED = "tool call denied by the permissions:"
BLOCKED = re.compile(r"^tool call blocked by (?P<who>[^:]+):")
NO_TOOL = re.compile(r"^there is no tool named `(?P<name>[^`]+)`")
RULE = re.compile(r"the rule `(?P<rule>[^`]+)`")


@dataclass(frozen=True)
class Divergence:
    """One difference: the step it is in (`turn 3`), and what differs there."""

    step: str
    what: str
    agent: str = ""
    """The sub-agent whose replay it is in (`lead/reviewer`), empty for the root."""

    @property
    def message(self) -> str:
        where = f"sub-agent `{self.agent}`, " if self.agent else ""
        return f"{where}{self.step}: {self.what}"


PromptCheck = Callable[[PromptRecord, ModelRequest], list[str]]


def compare_prompt(
    prompt: PromptRecord,
    request: ModelRequest,
    sections: Sequence[tuple[str, str]] | None,
    normalize: Normalize,
) -> list[str]:
    """The differences before the conversation: sections, tool schemas, settings.
    The same for every turn that sends the same prompt (`ReplayProvider` keeps it)."""
    found: list[str] = []
    if sections is not None:
        found.extend(_sections(prompt, sections, normalize))
    found.extend(_tools(prompt, request, normalize))
    if prompt.settings is not None:
        found.extend(_settings(prompt.settings, settings_record(request.settings)))
    return found


def compare_request(
    step: StepRecord,
    prompt: PromptRecord | None,
    request: ModelRequest,
    sections: Sequence[tuple[str, str]] | None,
    normalize: Normalize,
    *,
    check_prompt: PromptCheck | None = None,
) -> list[Divergence]:
    """Every difference between `request` and the recorded `step`, in reading order;
    `check_prompt` compares the prompt (default: `compare_prompt`, every time)."""
    found: list[str] = []
    if prompt is not None:
        if check_prompt is not None:
            found.extend(check_prompt(prompt, request))
        else:
            found.extend(compare_prompt(prompt, request, sections, normalize))
    found.extend(_messages(step, request, normalize))
    have = {tool.name for tool in request.tools}
    found.extend(
        f"the replay called `{name}`, which the agent no longer has"
        for name in dict.fromkeys(step.calls)
        if name not in have
    )
    return [Divergence(step.label, what) for what in found]


SECTION = re.compile(r"^section `(?P<name>[^`]+)` (?:changed|added)")
TOOL = re.compile(r"^tool schema `(?P<name>[^`]+)` (?:changed|added)")
TOOL_LINE = re.compile(r"^[+-] `- (?P<name>[A-Za-z0-9_.-]+):")


def with_sources(found: list[Divergence], described: Mapping[str, Any]) -> list[Divergence]:
    """Each divergence in the prompt or a tool schema with where that part comes from
    now (`agent.prompt_record`: the manifest line, the template, the tool's source)."""
    sections = {
        str(s.get("name")): s for s in described.get("sections", ()) if isinstance(s, Mapping)
    }
    tools = {
        str(t.get("name")): str(t.get("source") or "")
        for t in described.get("tools", ())
        if isinstance(t, Mapping)
    }
    located = []
    for divergence in found:
        where = _source(divergence.what, sections, tools)
        located.append(
            replace(divergence, what=f"{divergence.what} [{where}]") if where else divergence
        )
    return located


def _source(what: str, sections: Mapping[str, Any], tools: Mapping[str, str]) -> str:
    section = SECTION.match(what)
    if section is not None:
        record = sections.get(section.group("name"), {})
        change = what.split(": ", 1)[1] if ": " in what else ""
        tool = TOOL_LINE.match(change)
        if section.group("name") == "tools" and tool and tools.get(tool.group("name")):
            return f"from {tools[tool.group('name')]}"
        parts = [str(source) for source in record.get("sources", ())][:2]
        template = str(record.get("template") or "")
        if template and not template.startswith("default "):
            parts.append(f"template {template}")
        return ("from " + "; ".join(parts)) if parts else ""
    tool = TOOL.match(what)
    if tool is not None and tools.get(tool.group("name")):
        return f"from {tools[tool.group('name')]}"
    return ""


def _sections(
    prompt: PromptRecord, sections: Sequence[tuple[str, str]], normalize: Normalize
) -> list[str]:
    recorded = {s.name: s.text for s in prompt.sections}
    now = {name: normalize(text) for name, text in sections}
    found = []
    for name in dict.fromkeys([*now, *recorded]):
        if name not in recorded:
            found.append(f"section `{name}` added: + `{first_line(now[name])}`")
        elif name not in now:
            found.append(f"section `{name}` removed")
        elif not recorded[name].matches(now[name]):
            found.append(f"section `{name}` changed: {first_change(recorded[name], now[name])}")
    return found


def _tools(prompt: PromptRecord, request: ModelRequest, normalize: Normalize) -> list[str]:
    recorded = {tool.name: tool for tool in prompt.tools}
    now = {
        name: (normalize(description), normalize(parameters))
        for name, (description, parameters) in request_tools(request.tools).items()
    }
    removed = [name for name in recorded if name not in now]
    added = [name for name in now if name not in recorded]
    found = []
    if len(removed) == 1 and len(added) == 1:
        old = recorded[removed[0]]
        description, parameters = now[added[0]]
        if old.description.matches(description) and old.parameters.matches(parameters):
            return [f"tool schema `{removed[0]}` renamed `{added[0]}`"]
    for name in dict.fromkeys([*now, *recorded]):
        if name in removed:
            found.append(f"tool schema `{name}` removed")
        elif name in added:
            found.append(f"tool schema `{name}` added")
        else:
            description, parameters = now[name]
            parts = [
                part
                for part, record, text in (
                    ("description", recorded[name].description, description),
                    ("parameters", recorded[name].parameters, parameters),
                )
                if not record.matches(text)
            ]
            if parts:
                detail = (
                    _detail(recorded[name].parameters, parameters)
                    if parts == ["parameters"]
                    else ""
                )
                found.append(f"tool schema `{name}` changed: {', '.join(parts)}{detail}")
    return found


def _detail(old: TextRecord, new: str) -> str:
    return f" ({first_change(old, new)})"


def _settings(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    return [
        f"model setting `{key}` changed: `{_shown(recorded.get(key))}` → `{_shown(now.get(key))}`"
        for key in dict.fromkeys([*now, *recorded])
        if recorded.get(key) != now.get(key)
    ]


def _shown(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"tool"}:
        return f"tool {value['tool']}"
    return "none" if value is None else str(value)


def _messages(step: StepRecord, request: ModelRequest, normalize: Normalize) -> list[str]:
    messages = request.messages
    found: list[str] = []
    for offset, record in enumerate(step.messages):
        index = step.keep + offset
        if index >= len(messages):
            found.append(f"the session's message {index + 1} ({_describe(record)}) was not sent")
            break
        message = messages[index]
        role = message_role(message)
        text = normalize(message_text(message))
        if role != record.role:
            found.append(
                f"message {index + 1} is a {_noun(role)}; the session's was a {_describe(record)}"
            )
            break
        if not record.text.matches(text):
            found.append(_differs(record, text))
    if not found and len(messages) != step.count:
        found.append(f"the agent sent {len(messages)} messages, the session {step.count}")
    return found


def _differs(record: MessageRecord, text: str) -> str:
    """A message that differs, said as specifically as the texts allow."""
    if record.role != "tool":
        return f"{_noun(record.role)} differs: {first_change(record.text, text)}"
    call = f"call {record.call}" if record.call else f"call `{record.call_id}`"
    was = record.text.text or ""
    if text.startswith(DENIED) and not was.startswith(DENIED):
        rule = RULE.search(text)
        if rule:
            return f"permission rule `{rule.group('rule')}` now blocks {call}"
        return f"the permissions now block {call} (`{record.name}`): {text[len(DENIED) :].strip()}"
    blocked, before = BLOCKED.match(text), BLOCKED.match(was)
    if blocked and not before:
        return f"extension `{blocked.group('who')}` now blocks {call} (`{record.name}`)"
    if (before or was.startswith(DENIED)) and not (blocked or text.startswith(DENIED)):
        return f"{call} (`{record.name}`) is no longer blocked (the session: `{first_line(was)}`)"
    missing = NO_TOOL.match(text)
    if missing:
        return f"the replay called `{missing.group('name')}`, which the agent no longer has"
    where = f"workspace file `{record.path}`" if record.path else call
    return f"tool `{record.name}` result differs ({where}): {first_change(record.text, text)}"


def _describe(record: MessageRecord) -> str:
    if record.role == "tool":
        return f"`{record.name}` result of call {record.call}"
    return _noun(record.role)


def _noun(role: str) -> str:
    return {
        "tool": "tool result",
        "user": "user message",
        "context": "context message",
        "assistant": "assistant message",
    }.get(role, role)
