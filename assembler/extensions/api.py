"""What an extension sees: the API object its `setup(api, options)` receives.

Through it an extension adds capability (`register_tool`, `register_command`,
`register_provider`) and subscribes to events (`on`). It receives no handle on the
runner itself: everything it can change goes through one of the three kinds of
effect the audit trace can tell apart (added capability, changed control flow,
changed observation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from assembler.errors import ExtensionError
from assembler.frozen import FrozenDict, freeze_mapping
from assembler.messages import Message, ToolCall
from assembler.runner.hooks import PermissionOutcome
from assembler.tools.base import Tool, ToolResult

EVENTS = (
    "session_start",
    "session_end",
    "turn_start",
    "turn_end",
    "context",
    "tool_call",
    "tool_result",
)

Handler = Callable[[Any], Any | Awaitable[Any]]
_NO_ARGUMENTS: Mapping[str, Any] = FrozenDict()


@dataclass(frozen=True)
class Block:
    """Returned from a `tool_call` handler: the call must not run, and why."""

    reason: str


@dataclass(frozen=True)
class ResultPatch:
    """Returned from a `tool_result` handler: the fields to change. A field left as
    None keeps its value; `usage` is stored in the result's details."""

    content: str | None = None
    details: Mapping[str, Any] | None = None
    is_error: bool | None = None
    usage: Mapping[str, Any] | None = None


def read_only_call(call: ToolCall) -> ToolCall:
    """The call with a read-only copy of its arguments, all the way down
    (`assembler.frozen`)."""
    if call.arguments is None or isinstance(call.arguments, FrozenDict):
        return call  # nothing to change, or already a view made here
    return replace(call, arguments=freeze_mapping(call.arguments))


@dataclass(frozen=True)
class ToolCallEvent:
    """Before a tool runs: the model's proposal, read-only all the way down.

    `call.arguments` (and `arguments`) are a read-only copy (dicts and lists that
    raise on any change): a handler cannot redirect the call it judges, nor change
    what the audit trace says the model proposed. A guard that wants other arguments
    blocks and says which."""

    call: ToolCall
    tool_source: str
    workspace: Path
    permission: PermissionOutcome | None = None
    """What the manifest's permission rules decided (the call got this far, so it was
    allowed: by a rule, the default, the mode or a person); None without rules."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "call", read_only_call(self.call))

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> Mapping[str, Any]:
        return self.call.arguments or _NO_ARGUMENTS


@dataclass(frozen=True)
class ToolResultEvent:
    """After a tool ran: the result so far (earlier handlers' patches applied).

    Read-only like `ToolCallEvent`: the call's arguments and the result's `details`
    are read-only copies, so the trace's record of what ran cannot be changed in
    place; return a `ResultPatch` to change what the model sees."""

    call: ToolCall
    result: ToolResult

    def __post_init__(self) -> None:
        object.__setattr__(self, "call", read_only_call(self.call))
        details = self.result.details
        if not isinstance(details, FrozenDict):
            view = replace(self.result, details=freeze_mapping(details))
            object.__setattr__(self, "result", view)

    @property
    def name(self) -> str:
        return self.call.name


@dataclass(frozen=True)
class TurnEvent:
    turn: int
    message: Message | None = None


@dataclass(frozen=True)
class SessionEvent:
    agent: str
    reason: str = ""


@dataclass(frozen=True)
class Command:
    """A slash command for interactive sessions (`/name args`)."""

    name: str
    description: str
    handler: Callable[[str], Any | Awaitable[Any]]
    extension: str


@dataclass
class Registrations:
    """Everything one extension registered during its setup."""

    tools: list[Tool] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    providers: list[tuple[str, Callable[..., Any]]] = field(default_factory=list)
    handlers: dict[str, list[Handler]] = field(default_factory=dict)


class ExtensionAPI:
    """Passed to `setup(api, options)`; valid only during setup (later calls fail,
    so an extension cannot change the agent behind the snapshot's back)."""

    def __init__(self, name: str, workspace: Path, options: Mapping[str, Any]) -> None:
        self.name = name
        self.workspace = workspace
        self.options: Mapping[str, Any] = MappingProxyType(dict(options))
        self.registrations = Registrations()
        self._open = True

    def close(self) -> None:
        self._open = False

    def _check_open(self, what: str) -> None:
        if not self._open:
            raise ExtensionError(
                f"extension `{self.name}`: {what} is only possible during setup; "
                "call agent.reload() to change what extensions provide"
            )

    def register_tool(
        self,
        tool: Tool | Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        snippet: str | None = None,
        guidelines: tuple[str, ...] = (),
    ) -> Tool:
        """Add a tool: a `Tool`, or a plain function whose schema comes from its type
        hints and docstring (as for `python:` tools in a manifest)."""
        self._check_open("register_tool")
        if not isinstance(tool, Tool):
            from assembler.tools.python.tools import tool_from_function

            tool = tool_from_function(
                tool, name=name, description=description, snippet=snippet,
                source=f"extension:{self.name}",
            )  # fmt: skip
        source = tool.source if tool.source.startswith("extension:") else f"extension:{self.name}"
        built = Tool(
            name=name or tool.name,
            description=description or tool.description,
            parameters=tool.parameters,
            execute=tool.execute,
            snippet=snippet if snippet is not None else tool.snippet,
            guidelines=guidelines or tool.guidelines,
            source=source,
            main_argument=tool.main_argument,
        )
        self.registrations.tools.append(built)
        return built

    def tool(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator form of `register_tool` for a plain function."""
        self.register_tool(function)
        return function

    def register_command(
        self, name: str, handler: Callable[[str], Any], description: str = ""
    ) -> None:
        self._check_open("register_command")
        self.registrations.commands.append(
            Command(name.lstrip("/"), description, handler, self.name)
        )

    def register_provider(self, name: str, factory: Callable[..., Any]) -> None:
        """Make `name:<model>` usable, like `openai:`; see `assembler.providers.registry`."""
        self._check_open("register_provider")
        self.registrations.providers.append((name, factory))

    def on(self, event: str, handler: Handler | None = None) -> Any:
        """Subscribe `handler` to `event`; usable as `@api.on("tool_call")`."""
        self._check_open("on")
        if event not in EVENTS:
            raise ExtensionError(
                f"extension `{self.name}`: unknown event `{event}`; events: {', '.join(EVENTS)}"
            )

        def subscribe(function: Handler) -> Handler:
            self.registrations.handlers.setdefault(event, []).append(function)
            return function

        return subscribe(handler) if handler is not None else subscribe
