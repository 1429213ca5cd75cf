"""An agent's conversation and its session file, kept in step.

The runner tells a `SessionRecorder` of every message as it joins the conversation
(an assistant message with its tool calls before the tools run) and of every
compaction; the recorder appends one session entry each and remembers which entry
each message came from, so a compaction can name the first entry it keeps and a fork
can start from any message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.agent.prompt_record import fingerprint
from assembler.errors import SessionError
from assembler.manifest.model import Manifest
from assembler.messages import Message, ToolSchema, Usage
from assembler.sessions.store import Session, SessionStore

PromptDescriber = Callable[[str, Sequence[ToolSchema]], Mapping[str, Any]]
"""The payload of a `prompt` entry for a request's system prompt and tool schemas."""


class SessionRecorder:
    """`RunRecorder` writing to a session file."""

    def __init__(
        self,
        session: Session,
        entry_ids: Sequence[str] = (),
        describe: PromptDescriber | None = None,
    ) -> None:
        self.session = session
        self.entry_ids: list[str] = list(entry_ids)
        """The entry of each message in `runner.messages`, in order ("" if none)."""
        self.describe = describe
        self._prompt = ""

    def request(self, system: str, tools: Sequence[ToolSchema]) -> None:
        """A `prompt` entry when the prompt or the schemas changed since the last one
        this recorder wrote (see `agent.prompt_record`)."""
        if self.describe is None:
            return
        stamp = fingerprint(system, tools)
        if stamp == self._prompt:
            return
        self.session.append("prompt", self.describe(system, tools))
        self._prompt = stamp

    def message(self, message: Message, usage: Usage | None) -> None:
        entry = self.session.append_message(message, usage=usage)
        self.entry_ids.append(entry.id)

    def compaction(self, summary: str, cut: int, tokens_before: int, reason: str) -> None:
        kept = self.entry_ids[cut:]
        first_kept = next((entry for entry in kept if entry), None)
        entry = self.session.append_compaction(
            summary, first_kept, tokens_before=tokens_before, reason=reason
        )
        self.entry_ids = [entry.id, *kept]


@dataclass(frozen=True)
class Restored:
    """A session opened to continue: its conversation and the entry of each message."""

    session: Session
    messages: tuple[Message, ...]
    entry_ids: tuple[str, ...]


def restore(session: Session, leaf: str | None = None) -> Restored:
    """The conversation `session` continues with (from `leaf`, default its last entry).

    Tool calls left without a result (the run was killed mid-tool) get an
    "interrupted" error result; when they are at the end of the branch (the usual
    crash), the results are also appended to the file, so it is valid as it stands.
    """
    if leaf is not None:
        session.leaf = leaf
    context = session.context()
    messages = list(context.messages)
    ids = list(context.entry_ids)
    if context.repaired and ids and ids[-1] == "":
        first = ids.index("")
        if all(entry == "" for entry in ids[first:]):
            for index in range(first, len(messages)):
                ids[index] = session.append_message(messages[index]).id
    return Restored(session, tuple(messages), tuple(ids))


def open_session(store: SessionStore, manifest: Manifest, reference: str | Path) -> Session:
    """A session by id, id prefix or path; one of another agent is refused, since its
    tools and prompt are not this agent's."""
    session = store.open(reference)
    agent = session.header.get("agent")
    if agent and agent != manifest.name:
        raise SessionError(
            f"session {session.id} belongs to agent `{agent}`, not `{manifest.name}`"
        )
    return session
