"""A session file read as what a replay needs: the model's requests in order, what the
model saw at each, the user's inputs, the sub-agent sessions, where it ended.

One pass over the branch (the path from the root to the session's leaf), keeping the
conversation as `sessions.context` builds it (a compaction starts it over from its
summary), so a 5,000-entry session reads in milliseconds. A torn line is a bad input
here, unlike for resuming: a test made from half a session would test the wrong
thing, so `read_recording` refuses it and says how to proceed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.errors import ConversionError, SessionError
from assembler.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from assembler.runner.calls import SKIPPED_FOR_STEER
from assembler.runner.compaction import summary_message
from assembler.sessions.codec import message_from_dict
from assembler.sessions.context import INTERRUPTED
from assembler.sessions.records import Entry
from assembler.sessions.store import Session


@dataclass
class Request:
    """One model request of the session: a turn (its reply) or a compaction summary."""

    kind: str
    reply: AssistantMessage | None = None
    summary: str = ""
    usage: Mapping[str, int] = field(default_factory=dict)
    prompt: Mapping[str, Any] | None = None
    context: tuple[Message, ...] = ()
    keep: int = 0
    reason: str = ""
    run: int = 0
    turn_in_run: int = 0


@dataclass
class Input:
    """One thing the user did, in order: `prompt` (a run), `steer` (after a turn of the
    run), `follow_up`, `compact`, `interrupt` (the run stopped there)."""

    kind: str
    text: str = ""
    after_turn: int = 0
    tools_ran: bool = False
    before_tools: bool = False
    """A steer that came before its turn's calls started (they were skipped for it)."""


@dataclass
class Call:
    """A tool call of the session, numbered from 1 in order."""

    number: int
    id: str
    name: str
    arguments: Mapping[str, Any] | None


@dataclass
class Recording:
    session: Session
    header: Mapping[str, Any]
    requests: list[Request] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    subagents: list[Mapping[str, Any]] = field(default_factory=list)
    last_end: Mapping[str, Any] | None = None
    """The last `run_end` event on the branch (its answer, output, reason)."""
    workspace_end: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None
    """The values of the agent's `parameters` its first run started with (bound for
    the whole session, as `Agent` binds them)."""
    completed: bool = False
    """The last run ended (with a `run_end`), rather than being cut off."""

    @property
    def call_numbers(self) -> dict[str, int]:
        return {call.id: call.number for call in self.calls}


def open_session_file(path: Path) -> Session:
    """The session at `path`, refused when a line is torn or corrupt."""
    try:
        session = Session.load(path)
    except SessionError as e:
        raise ConversionError(str(e)) from e
    if session.skipped:
        raise ConversionError(
            f"{path}: {session.skipped} line(s) cannot be read (a torn or corrupt write); "
            "a test made from part of a session would test the wrong thing. Fork the "
            "session from its last good entry (`assemble run --resume ID --fork ENTRY`) "
            "and convert the fork"
        )
    return session


def read_recording(session: Session, leaf: str | None = None) -> Recording:
    """Everything a replay of `session` (its branch to `leaf`, default the last
    entry) needs; a `ConversionError` when an entry cannot be read."""
    try:
        branch = session.branch(leaf)
    except SessionError as e:
        raise ConversionError(str(e)) from e
    reader = _Reader(Recording(session, dict(session.header)))
    for entry in branch:
        try:
            reader.entry(entry)
        except SessionError as e:
            raise ConversionError(f"session {session.id}, entry {entry.id}: {e}") from e
    reader.finish()
    return reader.recording


class _Reader:
    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.context: list[Message] = []
        self.ids: list[str] = []
        self.sent = 0  # messages the previous request carried (after a compaction: 0)
        self.prompt: Mapping[str, Any] | None = None
        self.in_run = False
        self.run = 0
        self.turn = 0
        self.last_message: Message | None = None
        self.started_prompt: str | None = None

    def entry(self, entry: Entry) -> None:
        payload = entry.payload
        if entry.type == "prompt":
            self.prompt = payload
        elif entry.type == "message":
            self.message(entry, message_from_dict(payload.get("message")))
        elif entry.type == "compaction":
            self.compaction(entry)
        elif entry.type == "subagent":
            self.recording.subagents.append(dict(payload))
        elif entry.type == "event":
            event = payload.get("event")
            if isinstance(event, Mapping):
                self.event(event, payload)

    def event(self, event: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        if event.get("type") == "run_start":
            self.cut_run()
            self.run += 1
            self.turn = 0
            self.in_run = True
            self.started_prompt = str(event.get("prompt", ""))
            params = event.get("params")
            if self.run == 1 and isinstance(params, Mapping):
                self.recording.params = dict(params)
            self.recording.inputs.append(Input("prompt", self.started_prompt))
        elif event.get("type") == "run_end":
            self.in_run = False
            self.recording.last_end = dict(event)
            end = payload.get("workspace_end")
            if isinstance(end, Mapping):
                self.recording.workspace_end = end

    def message(self, entry: Entry, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            self.turn += 1
            self.recording.requests.append(
                Request(
                    "turn",
                    reply=message,
                    usage=dict(entry.payload.get("usage") or {}),
                    prompt=self.prompt,
                    context=tuple(self.context),
                    keep=self.sent,
                    run=self.run,
                    turn_in_run=self.turn,
                )
            )
            self.sent = len(self.context)
            for call in message.tool_calls:
                self.recording.calls.append(
                    Call(len(self.recording.calls) + 1, call.id, call.name, call.arguments)
                )
        elif isinstance(message, UserMessage):
            self.user(message.content)
        self.context.append(message)
        self.ids.append(entry.id)
        self.last_message = message

    def user(self, text: str) -> None:
        if self.started_prompt is not None and text == self.started_prompt:
            self.started_prompt = None  # the run's own prompt
            return
        self.started_prompt = None
        previous = self.last_message
        if isinstance(previous, AssistantMessage) and not previous.tool_calls:
            self.recording.inputs.append(Input("follow_up", text))
        else:
            skipped = (
                isinstance(previous, ToolResultMessage) and previous.content == SKIPPED_FOR_STEER
            )
            self.recording.inputs.append(
                Input("steer", text, after_turn=self.turn, before_tools=skipped)
            )

    def compaction(self, entry: Entry) -> None:
        summary = entry.payload.get("summary")
        if not isinstance(summary, str):
            raise SessionError("a compaction without a summary")
        reason = entry.payload.get("reason")
        self.recording.requests.append(
            Request("summary", summary=summary, reason=str(reason or ""), run=self.run)
        )
        if reason == "manual" and not self.in_run:
            self.recording.inputs.append(Input("compact"))
        first_kept = entry.payload.get("first_kept")
        start = self.ids.index(first_kept) if first_kept in self.ids else len(self.ids)
        self.context = [summary_message(summary), *self.context[start:]]
        self.ids = [entry.id, *self.ids[start:]]
        self.sent = 0

    def cut_run(self) -> None:
        """A run that ended without its `run_end` (a crash, then a resume; a fork from
        the middle of a run): the replay stops it where the session did."""
        if not self.in_run:
            return
        last = self.last_message
        if isinstance(last, AssistantMessage) and not last.tool_calls:
            return  # it had answered; only its `run_end` is missing
        tools_ran = isinstance(last, ToolResultMessage) and last.content != INTERRUPTED
        self.recording.inputs.append(Input("interrupt", after_turn=self.turn, tools_ran=tools_ran))
        self.in_run = False

    def finish(self) -> None:
        if self.in_run:
            self.cut_run()
        else:
            self.recording.completed = self.recording.last_end is not None
        if not self.recording.requests:
            raise ConversionError(
                f"session {self.recording.session.id} has no model reply to replay"
            )
