"""What a tool is, to the registry, the prompt and the runner.

One `Tool` object carries both faces of a tool: the formal interface the model calls
(`name`, `description`, `parameters`) and the prompt text that explains it
(`snippet`, `guidelines`). Keeping them together is what lets the prompt's tool
catalog and the schemas sent to the model come from one snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assembler.messages import ToolSchema
    from assembler.sandbox.runtime import Sandbox
    from assembler.tools.processes import ProcessScope

DEFAULT_TOOL_TIMEOUT = 120.0
DEFAULT_MAX_OUTPUT_LINES = 2000
DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns. `content` is what the model sees; `details` is for people
    and the audit trace (exit codes, paths touched), never sent to the model."""

    content: str
    is_error: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about the agent: where it works and its limits.

    `env` is the environment for subprocesses the tool starts: the allowlisted base
    plus the manifest's `tools.env` (`assembler.tools.environment.tool_environment`).
    `timeout` bounds every call of every built-in tool. `read_roots` are directories
    outside the workspace that the file tools may read but never write: the agent's
    skill directories, since the prompt tells the model to read a skill's file before
    following it. While the runner executes a call, `call_id` is the call's id and
    `emit` sends events to the run's stream before the call ends (a sub-agent's work,
    as `runner.events.SubagentEvent`s); None when nobody listens.
    `hidden` are regular expressions over rooted workspace paths (`/secrets/x`) that
    `grep`, `find` and `ls` leave out: the manifest's `read` deny rules
    (`assembler.permissions.hidden`). `guarded` are the agent's own files (manifests,
    extensions, tool modules, replays, templates) that `write` and `edit` refuse to
    change, whatever the rules say; a directory guards all it holds. `sandbox` confines
    every process a tool starts (None: unconfined); `processes` is the agent's
    `ProcessScope`, which its close stops (background jobs included).
    """

    workspace: Path
    timeout: float = DEFAULT_TOOL_TIMEOUT
    max_output_lines: int = DEFAULT_MAX_OUTPUT_LINES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    env: Mapping[str, str] | None = None
    call_id: str = ""
    emit: Callable[[object], None] | None = None
    read_roots: tuple[Path, ...] = ()
    hidden: tuple[str, ...] = ()
    guarded: frozenset[Path] = frozenset()
    sandbox: Sandbox | None = None
    processes: ProcessScope | None = None


ToolFunction = Callable[[Mapping[str, Any], ToolContext], Coroutine[Any, Any, ToolResult]]


@dataclass(frozen=True)
class Tool:
    """A callable tool with its schema and its prompt text.

    `source` says where it came from (`builtin`, `python:pkg.mod:func`,
    `mcp:server`, `extension:name`) so diagnostics about clashes can name both sides.
    `main_argument` names the argument permission patterns match (`edit(src/**)`);
    when it is None, the first required string parameter is used.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: ToolFunction
    snippet: str = ""
    guidelines: tuple[str, ...] = ()
    source: str = "builtin"
    main_argument: str | None = None

    def schema(self) -> ToolSchema:
        from assembler.messages import ToolSchema

        return ToolSchema(self.name, self.description, self.parameters)
