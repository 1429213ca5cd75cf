"""What the runner reads and whom it tells: the parts an agent swaps as one on
reload (prompt provider, tool registry, hooks, trace), and the recorder told of every
change to the conversation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from assembler.messages import Message, ToolSchema, Usage
from assembler.runner.hooks import NoHooks, RunnerHooks, ToolCallRecord
from assembler.tools.registry import ToolRegistry

TraceSink = Callable[[ToolCallRecord], None]


class RunnerParts(Protocol):
    """What the runner reads before every request: the prompt provider, the tool
    registry, the hooks and the trace sink, always from one resource snapshot. An
    agent swaps them as one object on reload, so the prompt and the tool schemas can
    never come from two snapshots."""

    @property
    def prompt(self) -> Callable[[], str]: ...
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def hooks(self) -> RunnerHooks: ...
    @property
    def trace(self) -> TraceSink | None: ...


@dataclass
class RunParts:
    """`RunnerParts` for a runner used on its own (tests, benchmarks, embedding)."""

    prompt: Callable[[], str]
    registry: ToolRegistry
    hooks: RunnerHooks = field(default_factory=NoHooks)
    trace: TraceSink | None = None


class RunRecorder(Protocol):
    """Told of every change to the conversation as it happens, before anything else
    runs: a session file records an assistant message with its tool calls before the
    tools execute, so a run killed mid-tool leaves a transcript that says so."""

    def message(self, message: Message, usage: Usage | None) -> None: ...

    def compaction(self, summary: str, cut: int, tokens_before: int, reason: str) -> None: ...

    def request(self, system: str, tools: Sequence[ToolSchema]) -> None:
        """The system prompt and tool schemas of the request about to be sent."""
