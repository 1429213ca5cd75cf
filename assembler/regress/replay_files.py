"""One recorded session as replay files: the model's side as a script (the `scripted`
format), and what the model saw at each request as an `Expected`.

A sub-agent's session becomes a replay of its own, linked from the parent's expected
inputs by the call that started it (`ChildLink`); `children` returns them so the
caller converts each the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assembler.messages import AssistantMessage
from assembler.regress.expected import ChildLink, Expected, PromptRecord, StepRecord
from assembler.regress.recording import Recording
from assembler.regress.records import call_path, message_record, prompt_record
from assembler.regress.texts import Rule

Normalize = Callable[[str], str]
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass
class ReplayFiles:
    """A session's replay, in memory: script steps, expected inputs, child sessions
    still to convert (`children`: the `subagent` entries, with their link names)."""

    script: list[dict[str, Any]]
    expected: Expected
    children: list[tuple[Mapping[str, Any], ChildLink]] = field(default_factory=list)


def replay_files(
    recording: Recording,
    *,
    inputs: Normalize,
    model_side: Normalize,
    rules: tuple[Rule, ...],
    context_window: int | None,
    child_name: Callable[[Mapping[str, Any], int], tuple[str, str]],
) -> ReplayFiles:
    """`inputs` normalises what the model saw; `model_side` what the model wrote (its
    secrets scrubbed, its paths as placeholders); `child_name(entry, n)` gives the
    script and expected file names of the n-th sub-agent session."""
    calls = {c.id: (c.number, call_path(c.arguments)) for c in recording.calls}
    prompts: list[PromptRecord] = []
    prompt_index: dict[int, int] = {}
    steps: list[StepRecord] = []
    script: list[dict[str, Any]] = []
    turns = summaries = 0
    for request in recording.requests:
        if request.kind == "summary":
            summaries += 1
            label = f"compaction {summaries}"
            steps.append(StepRecord("summary", label, reason=request.reason))
            script.append({"id": label, "text": model_side(request.summary)})
            continue
        turns += 1
        label = f"turn {turns}"
        index = None
        if request.prompt is not None:
            key = id(request.prompt)
            if key not in prompt_index:
                prompt_index[key] = len(prompts)
                prompts.append(prompt_record(request.prompt, inputs))
            index = prompt_index[key]
        reply = request.reply or AssistantMessage()
        steps.append(
            StepRecord(
                "turn",
                label,
                prompt=index,
                keep=request.keep,
                count=len(request.context),
                messages=tuple(
                    message_record(m, inputs, calls) for m in request.context[request.keep :]
                ),
                calls=tuple(call.name for call in reply.tool_calls),
            )
        )
        script.append(_script_step(label, reply, request.usage, model_side))
    children = []
    for number, entry in enumerate(recording.subagents, start=1):
        script_name, expected_name = child_name(entry, number)
        call_id = str(entry.get("call_id", ""))
        task = next(
            (
                str((call.arguments or {}).get("task", ""))
                for call in recording.calls
                if call.id == call_id
            ),
            "",
        )
        link = ChildLink(
            call_id=call_id,
            tool=str(entry.get("tool", "")),
            agent_path=str(entry.get("agent_path", "")),
            task=model_side(task),
            script=script_name,
            expected=expected_name,
        )
        children.append((entry, link))
    expected = Expected(
        agent=str(recording.header.get("agent", "")),
        session=str(recording.header.get("id", "")),
        model=str(recording.header.get("model") or ""),
        prompts=tuple(prompts),
        steps=tuple(steps),
        children=tuple(link for _, link in children),
        rules=rules,
        context_window=context_window,
    )
    return ReplayFiles(script, expected, children)


def _script_step(
    label: str, reply: AssistantMessage, usage: Mapping[str, Any], model_side: Normalize
) -> dict[str, Any]:
    step: dict[str, Any] = {"id": label}
    if reply.text or not reply.tool_calls:
        step["text"] = model_side(reply.text)
    if reply.tool_calls:
        step["tool_calls"] = [
            {
                "id": call.id,
                "name": call.name,
                "arguments": _plain(call.arguments, model_side)
                if call.arguments is not None
                else model_side(call.raw_arguments),
            }
            for call in reply.tool_calls
        ]
    counts = {k: v for k, v in usage.items() if k in USAGE_KEYS and isinstance(v, int) and v}
    if counts:
        step["usage"] = counts
    return step


def _plain(value: Any, normalize: Normalize) -> Any:
    if isinstance(value, str):
        return normalize(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v, normalize) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, normalize) for v in value]
    return value
