"""Typed, frozen views of a manifest that validated.

These are built only after the schema accepted the document (`manifest.loader`),
so they hold no optional-shape guesswork: paths are resolved against the manifest's
directory, defaults are filled in, `${VAR}` is replaced. Nothing here can be changed
after loading; an agent is rebuilt from a manifest, never patched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assembler.manifest.yaml_source import SourceMap

SECTION_NAMES = ("identity", "tools", "workspace", "skills", "memory")


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    script: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


@dataclass(frozen=True)
class BuiltinToolSet:
    names: tuple[str, ...]
    allow: tuple[str, ...] | None = None
    guidelines: tuple[str, ...] = ()


@dataclass(frozen=True)
class PythonToolSpec:
    function: str
    name: str | None = None
    description: str | None = None
    snippet: str | None = None
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PythonToolSet:
    tools: tuple[PythonToolSpec, ...]
    guidelines: tuple[str, ...] = ()


@dataclass(frozen=True)
class MCPServerSpec:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 30.0

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"


@dataclass(frozen=True)
class MCPToolSet:
    server: MCPServerSpec
    allow: tuple[str, ...] | None = None
    prefix: str = ""
    guidelines: tuple[str, ...] = ()


ToolSetSpec = BuiltinToolSet | PythonToolSet | MCPToolSet


@dataclass(frozen=True)
class ToolsSpec:
    sets: tuple[ToolSetSpec, ...] = (BuiltinToolSet(("coding",)),)
    guidelines: tuple[str, ...] = ()
    servers: Mapping[str, MCPServerSpec] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryPolicy:
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
    max_turns: int = 50
    tool_timeout: float = 120.0
    max_output_lines: int = 2000
    max_output_bytes: int = 50 * 1024
    max_consecutive_blocks: int = 3
    hook_timeout: float = 10.0
    context_file_max_bytes: int = 64 * 1024


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
    memory: MemoryPolicy | None = None
    extensions: tuple[ExtensionSpec, ...] = ()
    prompt: Mapping[str, TemplateOverride] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    source: SourceMap | None = field(default=None, compare=False, repr=False)

    @property
    def directory(self) -> Path:
        return self.path.parent
