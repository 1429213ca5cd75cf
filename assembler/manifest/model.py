"""Typed, frozen views of a manifest that validated.

These are built only after the schema accepted the document (`manifest.loader`),
so they hold no optional-shape guesswork: paths are resolved against the manifest's
directory, defaults are filled in, `${VAR}` is replaced. Nothing here can be changed
after loading; an agent is rebuilt from a manifest, never patched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assembler.budgets import BudgetLimits
from assembler.manifest.interpolate import referenced_variables
from assembler.manifest.yaml_source import SourceMap
from assembler.sandbox.spec import SandboxSpec

if TYPE_CHECKING:
    from assembler.messages import ToolChoice
    from assembler.pricing import Price

TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")
"""A tool name as the schema's `toolName` allows it."""

SECTION_NAMES = ("identity", "tools", "workspace", "skills", "memory")
_TOOL_CHOICES: Mapping[str, ToolChoice] = {"auto": "auto", "required": "required", "none": "none"}


@dataclass(frozen=True)
class ModelSpec:
    """`model:`: which provider and model answer, and how they are called."""

    provider: str
    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    script: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    base_url_template: str | None = None
    """`base_url` as the manifest writes it, `${VAR}` unexpanded: what is shown."""
    tool_choice: ToolChoice | None = None
    """`auto`, `required`, `none`, or `ForcedTool(name)`; None leaves it to the server."""
    price: Price | None = None
    """`model.price`: overrides the built-in price table."""
    cache: bool = True
    """`model.cache`: prompt-cache breakpoints on the Anthropic wire."""
    thinking_budget: int | None = None
    """`model.thinking.budget_tokens`: Anthropic extended thinking."""
    reasoning_effort: str | None = None
    """`model.reasoning_effort`: how hard a reasoning model thinks."""

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"

    @property
    def base_url_variables(self) -> tuple[str, ...]:
        """Environment variables whose values go into the request URL."""
        return referenced_variables(self.base_url_template or "")

    @staticmethod
    def parse_tool_choice(raw: object) -> ToolChoice | None:
        """The schema-valid manifest value (`required`, `{tool: ls}`) as a `ToolChoice`."""
        if isinstance(raw, Mapping):
            # imported here: the conversation types are start-up cost `validate` and
            # `render --dry-run` need only for a manifest that forces a tool
            from assembler.messages import ForcedTool

            return ForcedTool(str(raw["tool"]))
        return _TOOL_CHOICES.get(raw) if isinstance(raw, str) else None


@dataclass(frozen=True)
class BuiltinToolSet:
    """`- builtin: NAME`: built-in tools and sets, narrowed by `allow`."""

    names: tuple[str, ...]
    allow: tuple[str, ...] | None = None
    guidelines: tuple[str, ...] = ()


@dataclass(frozen=True)
class PythonToolSpec:
    """One `python:` tool: a `module:function` reference and what overrides its description."""

    function: str
    name: str | None = None
    description: str | None = None
    snippet: str | None = None
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PythonToolSet:
    """`- python: [...]`: tools from the project's own Python functions."""

    tools: tuple[PythonToolSpec, ...]
    guidelines: tuple[str, ...] = ()


@dataclass(frozen=True)
class MCPServerSpec:
    """One MCP server: how to start (stdio) or reach (HTTP) it, and its own sandbox."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    url_template: str | None = None
    """`url` as the manifest writes it, `${VAR}` unexpanded: what is shown."""
    header_templates: Mapping[str, str] = field(default_factory=dict)
    sandbox: SandboxSpec | None = None
    """A stdio server's own sandbox (`sandbox:` on the server); None: the agent's."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"

    @property
    def network_variables(self) -> tuple[str, ...]:
        """Environment variables whose values this server's URL or headers send."""
        texts = [self.url_template or "", *self.header_templates.values()]
        return tuple(dict.fromkeys(v for text in texts for v in referenced_variables(text)))


@dataclass(frozen=True)
class MCPToolSet:
    """`- mcp: SERVER`: the tools a server lists, narrowed by `allow`, renamed by `prefix`."""

    server: MCPServerSpec
    allow: tuple[str, ...] | None = None
    prefix: str = ""
    guidelines: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentToolSet:
    """A sub-agent: the manifest at `agent` offered as the tool `name(task)`.

    `name` and `description` default to the sub-agent's own (`None` here means "not
    written"). `workspace` is `own` (the sub-agent's manifest decides) or `inherit`
    (it works in this agent's workspace). `target` is the path as written.
    """

    agent: Path
    target: str
    name: str | None = None
    description: str | None = None
    workspace: Literal["own", "inherit"] = "own"
    guidelines: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    """Values of the sub-agent's parameters fixed for every call (`params:`)."""

    def tool_name(self, child: Manifest) -> str:
        return self.name or child.name

    def tool_description(self, child: Manifest) -> str:
        """The entry's description, else the sub-agent's, else one saying what it is."""
        return (
            self.description
            or child.description.strip()
            or f"Hands a task to the `{child.name}` agent, which works on it alone and "
            "answers with its result."
        )


ToolSetSpec = BuiltinToolSet | PythonToolSet | MCPToolSet | AgentToolSet


@dataclass(frozen=True)
class ToolEnvironmentSpec:
    """`tools.env`: what the agent's commands get beyond the base allowlist.

    `passthrough` holds names and `*` globs; `set` values are already interpolated.
    """

    passthrough: tuple[str, ...] = ()
    set: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolsSpec:
    """`tools:`: the tool sets in order, their guidelines, servers and environment."""

    sets: tuple[ToolSetSpec, ...] = (BuiltinToolSet(("coding",)),)
    guidelines: tuple[str, ...] = ()
    servers: Mapping[str, MCPServerSpec] = field(default_factory=dict)
    env: ToolEnvironmentSpec = field(default_factory=ToolEnvironmentSpec)


@dataclass(frozen=True)
class ContextDiscovery:
    """`context_discovery`: which file names are looked for in the workspace and its
    parents up to the repository root (`parents`), and in the user's config
    directory (`user`); `resources/discovery.py` finds them."""

    names: tuple[str, ...] = ("AGENTS.md",)
    parents: bool = True
    user: bool = True

    @classmethod
    def from_data(cls, data: object, *, explicit_files: bool) -> ContextDiscovery | None:
        """From a validated value; undeclared (None), it is on unless `context_files`
        is declared (an explicit list stays exactly that list)."""
        if data is None:
            return None if explicit_files else cls()
        if data is False:
            return None
        if data is True or not isinstance(data, dict):
            return cls()
        return cls(
            names=tuple(data.get("names", cls.names)),
            parents=bool(data.get("parents", True)),
            user=bool(data.get("user", True)),
        )


@dataclass(frozen=True)
class MemoryPolicy:
    """`memory:`: where records live and how many of which reach the prompt."""

    store: Path
    strategy: Literal["all", "keyword", "model", "none"] = "keyword"
    max_records: int = 5
    max_chars: int = 4000
    extraction_tool: bool = True
    extraction_at_session_end: bool = False
    consolidation_enabled: bool = True
    consolidation_max_records: int = 200
    injection: Literal["system", "message"] = "system"
    record_max_bytes: int = 4096


@dataclass(frozen=True)
class ExtensionSpec:
    """One extension declaration. `kind` says how to find it; `target` is the module
    name, entry-point name, or the file path as written; `path` the resolved file."""

    kind: Literal["module", "entry_point", "path"]
    target: str
    name: str
    path: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


#: A template override file is read only up to this size (a section template is short).
MAX_TEMPLATE_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class TemplateOverride:
    """A section template from the manifest: a `file`, or inline text that starts on
    `line` of `manifest` (so a render error can name the line it happened on)."""

    section: str
    text: str
    file: Path | None = None
    manifest: Path | None = None
    line: int = 0

    @property
    def origin(self) -> str:
        if self.file:
            return str(self.file)
        where = f"{self.manifest}:{self.line} " if self.manifest else "manifest "
        return f"{where}prompt.{self.section}.template"


@dataclass(frozen=True)
class Limits:
    """`limits:`: what bounds a run (turns, timeouts, output, parallel calls, budget)."""

    max_turns: int = 50
    tool_timeout: float = 120.0
    max_parallel_tools: int = 8
    max_output_lines: int = 2000
    max_output_bytes: int = 50 * 1024
    max_consecutive_blocks: int = 3
    hook_timeout: float = 10.0
    context_file_max_bytes: int = 64 * 1024
    context_window: int | None = None
    compact_reserve: int = 16_384
    permission_timeout: float = 300.0
    max_agent_depth: int = 3
    budget: BudgetLimits = field(default_factory=BudgetLimits)


@dataclass(frozen=True)
class PermissionsSpec:
    """The manifest's `permissions`: rules as written (`bash(git diff *)`), parsed
    and matched by `assembler.permissions`; `default` decides calls no rule matches.
    `self_edit`: paths (relative to the manifest) of the agent's own guards that its
    file tools may change after all (`assembler.agent.guards`)."""

    default: Literal["allow", "ask", "deny"] = "allow"
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    self_edit: tuple[str, ...] = ()

    @classmethod
    def from_data(cls, raw: Mapping[str, Any] | None) -> PermissionsSpec:
        """From the validated mapping (the schema checked every type)."""
        raw = raw or {}
        return cls(
            default=raw.get("default", "allow"),
            allow=tuple(raw.get("allow", ())),
            ask=tuple(raw.get("ask", ())),
            deny=tuple(raw.get("deny", ())),
            self_edit=tuple(raw.get("self_edit", ())),
        )


@dataclass(frozen=True)
class ParameterSpec:
    """One of the manifest's `parameters`: its name and the JSON Schema of its value.
    Without a `default` it is required."""

    name: str
    schema: Mapping[str, Any]

    @property
    def required(self) -> bool:
        return "default" not in self.schema

    @property
    def description(self) -> str:
        text = self.schema.get("description")
        return text if isinstance(text, str) else ""


@dataclass(frozen=True)
class TaskTemplate:
    """The manifest's `task`: a template of the first user message, starting on `line`
    of `manifest` (so an error can name the line it is on)."""

    text: str
    manifest: Path | None = None
    line: int = 0


@dataclass(frozen=True)
class OutputSpec:
    """The manifest's `output`: the schema the run's answer must validate against (a
    `$ref` file already read into it), the retries, and where the schema is written."""

    schema: Mapping[str, Any]
    retries: int = 2
    description: str = ""
    file: Path | None = None
    """The schema file a `{$ref: FILE}` named; None for an inline schema."""


@dataclass(frozen=True)
class Manifest:
    """A loaded, validated manifest. `path` is absolute; `source` maps JSON paths
    back to lines for errors found after loading."""

    path: Path
    name: str
    identity: str
    version: int = 1
    description: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    model: ModelSpec | None = None
    workspace: Path = Path()
    tools: ToolsSpec = field(default_factory=ToolsSpec)
    skills: tuple[Path, ...] = ()
    context_files: tuple[str, ...] = ("AGENTS.md",)
    context_files_declared: bool = False
    context_discovery: ContextDiscovery | None = None
    """None: only `context_files` (a manifest built in code, or discovery switched off)."""
    memory: MemoryPolicy | None = None
    extensions: tuple[ExtensionSpec, ...] = ()
    prompt: Mapping[str, TemplateOverride] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    permissions: PermissionsSpec = field(default_factory=PermissionsSpec)
    parameters: tuple[ParameterSpec, ...] = ()
    task: TaskTemplate | None = None
    output: OutputSpec | None = None
    sandbox: SandboxSpec | None = None
    """The `sandbox:` block; None when the manifest has none (nothing is confined)."""
    source: SourceMap | None = field(default=None, compare=False, repr=False)

    @property
    def directory(self) -> Path:
        return self.path.parent
