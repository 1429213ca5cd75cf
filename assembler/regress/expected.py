"""The expected model-visible inputs of a replay (`<task>.expected.json`).

One step per model request the session made, in order: a turn (an assistant reply) or
a compaction's summary. A turn names the prompt it was sent with (the system prompt by
section, the tool schemas and the model settings, shared between the turns that sent
the same ones) and the messages the model saw that the previous request did not carry
(`keep` says how many it kept; a compaction starts over). Texts are `TextRecord`s:
whole when short, hashes per line when long. Sub-agent sessions are replays of their
own, linked from `children` by the call that started them.

Everything here is plain JSON a person may edit: a `text` is hashed again when read,
and `normalize` holds the rules both sides go through before they are compared.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from assembler.errors import ConversionError
from assembler.regress.texts import Rule, TextRecord

FORMAT: Final = 1
StepKind = Literal["turn", "summary"]


@dataclass(frozen=True)
class SectionRecord:
    name: str
    text: TextRecord


@dataclass(frozen=True)
class ToolRecord:
    """A tool schema: its name, description and a hash of its parameters (the
    parameters themselves when short, to say what changed)."""

    name: str
    description: TextRecord
    parameters: TextRecord


@dataclass(frozen=True)
class PromptRecord:
    """What a request told the model before the conversation."""

    sections: tuple[SectionRecord, ...]
    tools: tuple[ToolRecord, ...]
    settings: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class MessageRecord:
    """One message the model saw. For a tool result: the tool, the call's number in
    the session (`call`, 1-based), its id, the workspace file it named (`path`)."""

    role: str
    text: TextRecord
    name: str = ""
    call: int = 0
    call_id: str = ""
    path: str = ""
    is_error: bool = False


@dataclass(frozen=True)
class StepRecord:
    """One model request of the session."""

    kind: StepKind
    label: str
    prompt: int | None = None
    keep: int = 0
    count: int = 0
    messages: tuple[MessageRecord, ...] = ()
    calls: tuple[str, ...] = ()
    """The tools the reply calls (what the replay will ask the agent to run)."""
    reason: str = ""
    """A summary's: `manual`, `threshold`, or `overflow` (the turn request before it
    was too long for the model, and the replay says so again)."""


@dataclass(frozen=True)
class ChildLink:
    """A sub-agent's session, replayed on its own: the call that started it."""

    call_id: str
    tool: str
    agent_path: str
    task: str
    script: str
    expected: str


@dataclass(frozen=True)
class Expected:
    agent: str
    session: str
    prompts: tuple[PromptRecord, ...]
    steps: tuple[StepRecord, ...]
    children: tuple[ChildLink, ...] = ()
    rules: tuple[Rule, ...] = ()
    context_window: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    model: str = ""
    """The model the session ran with (`provider:name`): its settings are the ones a
    replay sends (another provider than the manifest's starts from defaults)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": FORMAT,
            "agent": self.agent,
            "session": self.session,
            "model": self.model,
            "normalize": [rule.to_dict() for rule in self.rules],
        }
        if self.context_window is not None:
            data["context_window"] = self.context_window
        data["prompts"] = [_prompt_dict(prompt) for prompt in self.prompts]
        data["steps"] = [_step_dict(step) for step in self.steps]
        if self.children:
            data["children"] = [vars(child).copy() for child in self.children]
        data.update(self.extra)
        return data

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n", "utf-8")


def _prompt_dict(prompt: PromptRecord) -> dict[str, Any]:
    data: dict[str, Any] = {
        "sections": [{"name": s.name, **s.text.to_dict()} for s in prompt.sections],
        "tools": [
            {
                "name": t.name,
                "description": t.description.to_dict(),
                "parameters": t.parameters.to_dict(),
            }
            for t in prompt.tools
        ],
    }
    if prompt.settings is not None:
        data["settings"] = dict(prompt.settings)
    return data


def _step_dict(step: StepRecord) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": step.kind, "label": step.label}
    if step.kind == "summary":
        data["reason"] = step.reason
        return data
    data.update(prompt=step.prompt, keep=step.keep, count=step.count)
    data["messages"] = [_message_dict(m) for m in step.messages]
    if step.calls:
        data["calls"] = list(step.calls)
    return data


def _message_dict(message: MessageRecord) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role}
    for key in ("name", "call", "call_id", "path", "is_error"):
        value = getattr(message, key)
        if value:
            data[key] = value
    data.update(message.text.to_dict())
    return data


# -- reading ---------------------------------------------------------------------


def load_expected(path: Path) -> Expected:
    """An expected file, checked; `ConversionError` names the file and the place."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except OSError as e:
        raise ConversionError(f"cannot read the expected inputs {path}: {e.strerror}") from e
    except ValueError as e:
        raise ConversionError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(data, dict):
        raise ConversionError(f"{path}: expected a JSON object")
    version = data.get("format")
    if version != FORMAT:
        raise ConversionError(
            f"{path}: expected inputs of format {version!r}; this assembler reads format {FORMAT}"
        )
    where = str(path)
    try:
        prompts = tuple(
            _read_prompt(p, f"{where}: prompts[{i}]") for i, p in enumerate(_list(data, "prompts"))
        )
        steps = tuple(
            _read_step(s, f"{where}: steps[{i}]", len(prompts))
            for i, s in enumerate(_list(data, "steps"))
        )
        children = tuple(
            _read_child(c, f"{where}: children[{i}]") for i, c in enumerate(_list(data, "children"))
        )
        rules = tuple(
            _read_rule(r, f"{where}: normalize[{i}]")
            for i, r in enumerate(_list(data, "normalize"))
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ConversionError(f"{where}: malformed expected inputs ({e})") from e
    window = data.get("context_window")
    return Expected(
        agent=str(data.get("agent", "")),
        session=str(data.get("session", "")),
        prompts=prompts,
        steps=steps,
        children=children,
        rules=rules,
        context_window=window if isinstance(window, int) else None,
        model=str(data.get("model", "")),
    )  # fmt: skip


def _list(data: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConversionError(f"`{key}` must be a list")
    return value


def _read_prompt(data: Any, where: str) -> PromptRecord:
    sections = tuple(
        SectionRecord(str(s["name"]), TextRecord.from_dict(s, f"{where}: section {s['name']}"))
        for s in data["sections"]
    )
    tools = tuple(
        ToolRecord(
            str(t["name"]),
            TextRecord.from_dict(t["description"], f"{where}: tool {t['name']}"),
            TextRecord.from_dict(t["parameters"], f"{where}: tool {t['name']}"),
        )
        for t in data["tools"]
    )
    settings = data.get("settings")
    return PromptRecord(sections, tools, settings if isinstance(settings, dict) else None)


def _read_step(data: Any, where: str, prompts: int) -> StepRecord:
    kind = data["kind"]
    if kind not in ("turn", "summary"):
        raise ConversionError(f"{where}: `kind` is `turn` or `summary`, not {kind!r}")
    prompt = data.get("prompt")
    if prompt is not None and not (isinstance(prompt, int) and 0 <= prompt < prompts):
        raise ConversionError(f"{where}: `prompt` {prompt!r} names no prompt")
    return StepRecord(
        kind=kind,
        label=str(data.get("label", "")),
        prompt=prompt,
        keep=int(data.get("keep", 0)),
        count=int(data.get("count", 0)),
        messages=tuple(_read_message(m, f"{where}: messages[{i}]") for i, m in enumerate(data.get("messages", []))),
        calls=tuple(str(c) for c in data.get("calls", [])),
        reason=str(data.get("reason", "")),
    )  # fmt: skip


def _read_message(data: Any, where: str) -> MessageRecord:
    return MessageRecord(
        role=str(data["role"]),
        text=TextRecord.from_dict(data, where),
        name=str(data.get("name", "")),
        call=int(data.get("call", 0)),
        call_id=str(data.get("call_id", "")),
        path=str(data.get("path", "")),
        is_error=bool(data.get("is_error", False)),
    )


def _read_child(data: Any, where: str) -> ChildLink:
    try:
        return ChildLink(**{key: str(data[key]) for key in ChildLink.__dataclass_fields__})
    except KeyError as e:
        raise ConversionError(f"{where}: a child link needs {e.args[0]!r}") from e


def _read_rule(data: Any, where: str) -> Rule:
    if not isinstance(data, dict) or not isinstance(data.get("pattern"), str):
        raise ConversionError(f"{where}: a rule is {{pattern, replace}}")
    return Rule(data["pattern"], str(data.get("replace", "")))
