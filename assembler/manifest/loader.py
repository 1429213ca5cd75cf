"""From a YAML file to a typed `Manifest`: read, check against the schema, build.

`parse_manifest` never raises for problems in the file: it returns every issue it
found, so `assemble validate` can report them all in one run. `load_manifest` is the
strict front door used by `render`, `run` and the SDK: it also runs the static
checks of `assembler.validation` and raises one `ManifestError` holding every error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.budgets import BudgetLimits
from assembler.errors import Issue, ManifestError
from assembler.manifest.interpolate import interpolate
from assembler.manifest.model import (
    MAX_TEMPLATE_FILE_BYTES,
    AgentToolSet,
    BuiltinToolSet,
    ContextDiscovery,
    ExtensionSpec,
    Limits,
    Manifest,
    MCPServerSpec,
    MCPToolSet,
    MemoryPolicy,
    ModelSpec,
    OutputSpec,
    ParameterSpec,
    PermissionsSpec,
    PythonToolSet,
    PythonToolSpec,
    TaskTemplate,
    TemplateOverride,
    ToolEnvironmentSpec,
    ToolSetSpec,
    ToolsSpec,
)
from assembler.manifest.schema import schema_issues
from assembler.manifest.schema_file import read_schema_file, schema_file_reference
from assembler.manifest.yaml_source import JsonPath, SourceMap, YamlDocument, load_yaml_file
from assembler.safe_read import FileRefused, read_small_text
from assembler.sandbox.spec import SandboxSpec

if TYPE_CHECKING:
    from assembler.pricing import Price

DEFAULT_MEMORY_STORE = ".assembler/memory"


def _price(raw: Mapping[str, Any]) -> Price:
    # imported here: only a manifest that gives `model.price` needs the price table's
    # module, and `validate` and `render --dry-run` start faster without it
    from assembler.pricing import Price

    return Price.from_mapping(raw)


@dataclass(frozen=True)
class ParsedManifest:
    """The outcome of reading one file: the raw document (when it parsed), the typed
    manifest (when it also matched the schema) and every issue found on the way."""

    path: Path
    document: YamlDocument | None
    manifest: Manifest | None
    issues: tuple[Issue, ...]

    @property
    def has_errors(self) -> bool:
        return any(issue.severity == "error" for issue in self.issues)


def parse_manifest(
    path: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    unset_variables: str = "error",
    display: str | None = None,
) -> ParsedManifest:
    """Read `path` and build its `Manifest`, collecting issues instead of raising.

    `unset_variables` is "error" when the manifest is about to run and "warning" for
    `assemble validate`, where CI may not hold the secrets a run would need.
    """
    file = Path(path)
    shown = display or str(path)
    try:
        document = load_yaml_file(file, shown, collect=True)
    except ManifestError as e:
        return ParsedManifest(file, None, None, e.issues)
    issues = [*document.issues, *schema_issues(document.data, document.source)]
    if any(issue.severity == "error" for issue in issues):
        return ParsedManifest(file, document, None, tuple(issues))
    builder = _ManifestBuilder(
        file.resolve(), document, os.environ if env is None else env, unset_variables
    )
    manifest = builder.build()
    return ParsedManifest(file, document, manifest, (*issues, *builder.issues))


class _ManifestBuilder:
    """Builds the frozen dataclasses from a document the schema accepted."""

    def __init__(
        self, path: Path, document: YamlDocument, env: Mapping[str, str], unset: str
    ) -> None:
        self.path = path
        self.base = path.parent
        self.data: dict[str, Any] = document.data
        self.source: SourceMap = document.source
        self.env = env
        self.unset_severity = "warning" if unset == "warning" else "error"
        self.issues: list[Issue] = []

    def build(self) -> Manifest:
        d = self.data
        workspace = self.base / d.get("workspace", ".")
        return Manifest(
            path=self.path,
            version=d["version"],
            name=d["name"],
            description=d.get("description", ""),
            identity=d["identity"],
            context=d.get("context", {}),
            model=self.model(d.get("model")),
            workspace=Path(os.path.normpath(workspace)),
            tools=self.tools(d.get("tools")),
            skills=tuple(self.resolve(p) for p in d.get("skills", ())),
            context_files=tuple(d.get("context_files", ("AGENTS.md",))),
            context_files_declared="context_files" in d,
            context_discovery=ContextDiscovery.from_data(
                d.get("context_discovery"), explicit_files="context_files" in d
            ),
            memory=self.memory(d.get("memory"), workspace),
            extensions=tuple(self.extension(e) for e in d.get("extensions", ())),
            prompt=self.prompt(d.get("prompt", {})),
            limits=self.limits(d.get("limits", {})),
            permissions=PermissionsSpec.from_data(d.get("permissions")),
            parameters=tuple(
                ParameterSpec(name, spec) for name, spec in d.get("parameters", {}).items()
            ),
            task=self.task(d.get("task")),
            output=self.output(d.get("output")),
            sandbox=SandboxSpec.from_data(d["sandbox"]) if "sandbox" in d else None,
            source=self.source,
        )

    def resolve(self, relative: str) -> Path:
        return Path(os.path.normpath(self.base / os.path.expanduser(relative)))

    def text(self, value: str, path: JsonPath) -> str:
        def missing(name: str) -> None:
            self.issues.append(
                self.source.issue(
                    path,
                    f"environment variable `{name}` is not set"
                    + ("; `assemble run` needs it" if self.unset_severity == "warning" else ""),
                    severity=self.unset_severity,
                )
            )

        return interpolate(value, self.env, missing)

    def model(self, raw: str | Mapping[str, Any] | None) -> ModelSpec | None:
        if raw is None:
            return None
        if isinstance(raw, str):
            provider, name = raw.split(":", 1)
            return ModelSpec(provider=provider, name=name)
        base_url = raw.get("base_url")
        script = raw.get("script")
        return ModelSpec(
            provider=raw["provider"],
            name=raw.get("name", raw["provider"]),
            base_url=self.text(base_url, ("model", "base_url")) if base_url else None,
            api_key_env=raw.get("api_key_env"),
            temperature=raw.get("temperature"),
            max_tokens=raw.get("max_tokens"),
            script=self.resolve(script) if script else None,
            options=raw.get("options", {}),
            base_url_template=base_url or None,
            tool_choice=ModelSpec.parse_tool_choice(raw.get("tool_choice")),
            price=_price(raw["price"]) if "price" in raw else None,
            cache=raw.get("cache", True),
            thinking_budget=(raw.get("thinking") or {}).get("budget_tokens"),
            reasoning_effort=raw.get("reasoning_effort"),
        )

    def limits(self, raw: Mapping[str, Any]) -> Limits:
        """`budget` becomes `BudgetLimits`; a duration the schema let through but that
        is no time at all (`0s`) is left for the budget check to report, located."""
        values = {k: v for k, v in raw.items() if k != "budget"}
        try:
            budget = BudgetLimits.from_mapping(raw.get("budget"))
        except ValueError:
            budget = BudgetLimits.from_mapping(
                {k: v for k, v in raw["budget"].items() if k != "wall_time"}
            )
        return Limits(**values, budget=budget)

    def tools(self, raw: Mapping[str, Any] | None) -> ToolsSpec:
        if raw is None:
            return ToolsSpec()
        servers = {
            name: self.server(name, spec, ("tools", "servers", name))
            for name, spec in raw.get("servers", {}).items()
        }
        sets: list[ToolSetSpec] = []
        for index, item in enumerate(raw.get("sets", ())):
            built = self.tool_set(item, servers, ("tools", "sets", index))
            if built is not None:
                sets.append(built)
        env = raw.get("env", {})
        environment = ToolEnvironmentSpec(
            passthrough=tuple(env.get("passthrough", ())),
            set={
                k: self.text(v, ("tools", "env", "set", k)) for k, v in env.get("set", {}).items()
            },
        )
        # `tools: {env: ...}` without `sets` keeps the default set; `sets: []` means none.
        chosen = tuple(sets) if "sets" in raw else ToolsSpec().sets
        return ToolsSpec(chosen, tuple(raw.get("guidelines", ())), servers, environment)

    def tool_set(
        self, item: str | Mapping[str, Any], servers: Mapping[str, MCPServerSpec], path: JsonPath
    ) -> ToolSetSpec | None:
        if isinstance(item, str):
            return BuiltinToolSet((item,))
        guidelines = tuple(item.get("guidelines", ()))
        allow = tuple(item["allow"]) if "allow" in item else None
        if "builtin" in item:
            names = item["builtin"]
            return BuiltinToolSet(
                (names,) if isinstance(names, str) else tuple(names), allow, guidelines
            )
        if "python" in item:
            entries = item["python"]
            entries = [entries] if isinstance(entries, str | dict) else entries
            return PythonToolSet(tuple(_python_tool(e) for e in entries), guidelines)
        if "agent" in item:
            return AgentToolSet(
                agent=self.resolve(item["agent"]),
                target=item["agent"],
                name=item.get("name"),
                description=item.get("description"),
                workspace=item.get("workspace", "own"),
                guidelines=guidelines,
                params=item.get("params", {}),
            )
        server = item["mcp"]
        if isinstance(server, str):
            if server not in servers:
                # Reported by `validation.checks.check_mcp`, which also runs when the
                # schema found errors elsewhere in the file.
                return None
            spec = servers[server]
        else:
            spec = self.server(f"sets[{path[-1]}]", server, (*path, "mcp"))
        return MCPToolSet(spec, allow, item.get("prefix", ""), guidelines)

    def server(self, name: str, raw: Mapping[str, Any], path: JsonPath) -> MCPServerSpec:
        cwd = raw.get("cwd")
        return MCPServerSpec(
            name=name,
            command=raw.get("command"),
            args=tuple(self.text(a, (*path, "args", i)) for i, a in enumerate(raw.get("args", ()))),
            env={k: self.text(v, (*path, "env", k)) for k, v in raw.get("env", {}).items()},
            cwd=self.resolve(cwd) if cwd else None,
            url=self.text(raw["url"], (*path, "url")) if "url" in raw else None,
            headers={
                k: self.text(v, (*path, "headers", k)) for k, v in raw.get("headers", {}).items()
            },
            timeout=float(raw.get("timeout", 30.0)),
            url_template=raw.get("url"),
            header_templates=dict(raw.get("headers", {})),
            sandbox=SandboxSpec.from_data(raw["sandbox"]) if "sandbox" in raw else None,
        )

    def memory(self, raw: Mapping[str, Any] | None, workspace: Path) -> MemoryPolicy | None:
        if raw is None:
            return None
        selection = raw.get("selection", {})
        extraction = raw.get("extraction", {})
        consolidation = raw.get("consolidation", {})
        store = Path(os.path.normpath(workspace / raw.get("store", DEFAULT_MEMORY_STORE)))
        return MemoryPolicy(
            store=store,
            strategy=selection.get("strategy", "keyword"),
            max_records=selection.get("max_records", 5),
            max_chars=selection.get("max_chars", 4000),
            extraction_tool=extraction.get("tool", True),
            extraction_at_session_end=extraction.get("at_session_end", False),
            consolidation_enabled=consolidation.get("enabled", True),
            consolidation_max_records=consolidation.get("max_records", 200),
            injection=raw.get("injection", "system"),
            record_max_bytes=raw.get("record_max_bytes", 4096),
        )

    def extension(self, raw: Mapping[str, Any]) -> ExtensionSpec:
        options = raw.get("options", {})
        if "path" in raw:
            file = self.resolve(raw["path"])
            return ExtensionSpec("path", raw["path"], raw.get("name", file.stem), file, options)
        if "module" in raw:
            return ExtensionSpec(
                "module", raw["module"], raw.get("name", raw["module"]), None, options
            )
        name = raw["entry_point"]
        return ExtensionSpec("entry_point", name, raw.get("name", name), None, options)

    def task(self, raw: str | None) -> TaskTemplate | None:
        if raw is None:
            return None
        start = self.source.text_position(("task",), 1, 1)
        return TaskTemplate(raw, self.path, start.line)

    def output(self, raw: Mapping[str, Any] | None) -> OutputSpec | None:
        """`output`, its schema read from the file a `{$ref: FILE}` names (a file that
        cannot be read is an issue at the `$ref`, and then there is no output spec)."""
        if raw is None:
            return None
        schema: Mapping[str, Any] = raw["schema"]
        file = None
        written = schema_file_reference(schema)
        if written is not None:
            file = self.resolve(written)
            workspace = self.resolve(self.data.get("workspace", "."))
            read = read_schema_file(file, (self.base, workspace), written)
            if read.document is None:
                self.issues.extend(read.issues)
                at = ("output", "schema", "$ref")
                self.issues.append(self.source.issue(at, f"schema file {written} {read.problem}"))
                return None
            schema = read.document.data
        description = raw.get("description") or schema.get("description") or ""
        return OutputSpec(
            schema=schema,
            retries=raw.get("retries", 2),
            description=description if isinstance(description, str) else "",
            file=file,
        )

    def prompt(self, raw: Mapping[str, Any]) -> dict[str, TemplateOverride]:
        overrides: dict[str, TemplateOverride] = {}
        for section, spec in raw.items():
            if "template" in spec:
                start = self.source.text_position(("prompt", section, "template"), 1, 1)
                overrides[section] = TemplateOverride(
                    section, spec["template"], manifest=self.path, line=start.line
                )
                continue
            file = self.resolve(spec["file"])
            workspace = self.resolve(self.data.get("workspace", "."))
            text, problem = read_template_file(file, (self.base, workspace))
            if text is None:
                message = f"template file {spec['file']} {problem}"
                self.issues.append(self.source.issue(("prompt", section, "file"), message))
                continue
            overrides[section] = TemplateOverride(section, text, file)
        return overrides


def read_template_file(file: Path, roots: Sequence[Path]) -> tuple[str | None, str]:
    """A `prompt.<section>.file` override's text, or None and why not (`not found`,
    `cannot be read: ...`, `is outside ...`), to follow "template file NAME".

    The place is checked before anything is read: the file must resolve inside one of
    `roots` (the manifest's directory, the workspace), since a manifest may only put
    project files into the prompt; then only a regular file of at most
    `MAX_TEMPLATE_FILE_BYTES` is read (`/dev/zero` or a FIFO is refused, not read).
    `validate` and the loader both call this, so the same problem reads the same.
    """
    try:
        resolved = file.resolve()
        inside = any(resolved.is_relative_to(root.resolve()) for root in roots)
    except (OSError, RuntimeError, ValueError) as e:
        return None, f"cannot be resolved: {_reason(e)}"
    if not inside:
        return None, (
            "is outside the manifest's directory and the workspace; a manifest may only "
            "put project files into the prompt"
        )
    try:
        return read_small_text(resolved, MAX_TEMPLATE_FILE_BYTES), ""
    except FileNotFoundError:
        return None, "not found"
    except (FileRefused, OSError) as e:
        return None, f"cannot be read: {_reason(e)}"


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def _python_tool(entry: str | Mapping[str, Any]) -> PythonToolSpec:
    if isinstance(entry, str):
        return PythonToolSpec(entry)
    return PythonToolSpec(
        function=entry["function"],
        name=entry.get("name"),
        description=entry.get("description"),
        snippet=entry.get("snippet"),
        parameters=entry.get("parameters"),
    )


MissingHook = Callable[[str], None]
