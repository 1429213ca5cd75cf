"""Everything about trust: which project code an agent would run, the user's store of
trusted directories, and the check that refuses to build before that code runs.

Project code (extension files and modules, Python tools whose source is in the
project, MCP stdio commands a project manifest declares) runs only in a trusted
directory (DESIGN.md section 7), and trust is decided before any repo-local code
runs. Trust is the user's decision, stored outside any project
(`<config dir>/trust.json`), keyed by the resolved directory; a manifest cannot grant
it and a checkout cannot ship it. Trusting a directory trusts everything beneath it.

Code is looked up in the manifest's directory, then the workspace. Both are project
directories, and each one that holds code to run must be trusted: trusting `agents/`
does not let a module the agent itself wrote into its workspace run next time.
Installed modules and entry points are the user's own environment and need no trust.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assembler.errors import TrustError
from assembler.files import atomic_write
from assembler.manifest.model import Manifest, MCPToolSet, PythonToolSet
from assembler.python_refs import locate_module
from assembler.urls import display_url, is_local_url
from assembler.user_dirs import default_config_dir

TRUST_FILE = "trust.json"

TrustPrompt = Callable[[Path, list[str]], bool]
"""Asks the user whether to trust a directory, showing the code that would run there."""


@dataclass(frozen=True)
class ProjectCode:
    """One piece of project code and the directory whose trust it needs."""

    description: str
    root: Path


def code_roots(manifest: Manifest) -> list[Path]:
    """Where project modules are looked up, in order: the manifest's directory, then
    the workspace (used alike by validation, trust and import)."""
    return list(dict.fromkeys([manifest.directory.resolve(), manifest.workspace.resolve()]))


def project_code(manifest: Manifest, *, include_extensions: bool = True) -> list[ProjectCode]:
    """What building this agent would run or send on the project's say-so, each with
    the directory whose trust it needs: project code, and network destinations the
    manifest picks that receive the user's secrets (a `${VAR}` in a URL or header,
    or the API key sent to a `base_url` that is not on this machine)."""
    roots = code_roots(manifest)
    manifest_dir = roots[0]
    found: list[ProjectCode] = []

    def module_in_project(module: str, what: str) -> None:
        location = locate_module(module, roots)
        if location.path is None or not location.in_project:
            return
        shown = _relative(location.path, manifest_dir)
        if location.target is not None and location.target != location.path:
            shown += f" -> {_relative(location.target, manifest_dir)}"
        for root in location.roots:
            found.append(ProjectCode(f"{what} ({shown})", root))

    for extension in manifest.extensions if include_extensions else ():
        if extension.kind == "path" and extension.path is not None:
            description = f"extension file {_relative(extension.path, manifest_dir)}"
            found.append(ProjectCode(description, manifest_dir))
        elif extension.kind == "module":
            module_in_project(extension.target, f"extension module {extension.target}")
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, PythonToolSet):
            for tool in tool_set.tools:
                module_in_project(tool.function.partition(":")[0], f"Python tool {tool.function}")
        elif isinstance(tool_set, MCPToolSet) and tool_set.server.command:
            description = (
                f"MCP server `{tool_set.server.name}` (command `{tool_set.server.command}`)"
            )
            found.append(ProjectCode(description, manifest_dir))
        elif isinstance(tool_set, MCPToolSet) and tool_set.server.network_variables:
            server = tool_set.server
            found.append(
                ProjectCode(
                    f"MCP server `{server.name}` sends {_variables(server.network_variables)} "
                    f"to {display_url(server.url_template or '')}",
                    manifest_dir,
                )
            )
    found.extend(_model_endpoint(manifest, manifest_dir))
    return list(dict.fromkeys(found))


def _model_endpoint(manifest: Manifest, manifest_dir: Path) -> list[ProjectCode]:
    """A model `base_url` receives the API key, and whatever `${VAR}` its URL holds."""
    spec = manifest.model
    if spec is None or not spec.base_url:
        return []
    sent = [f"${{{name}}}" for name in spec.base_url_variables]
    if not is_local_url(spec.base_url):
        sent.append(f"your API key (${spec.api_key_env})" if spec.api_key_env else "your API key")
    if not sent:
        return []
    shown = display_url(spec.base_url_template or spec.base_url)
    return [ProjectCode(f"model endpoint {shown} receives {' and '.join(sent)}", manifest_dir)]


def _variables(names: tuple[str, ...]) -> str:
    return ", ".join(f"${{{name}}}" for name in names)


def _relative(path: Path, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class TrustedDirectory:
    path: Path
    added: str


class TrustStore:
    """The user's list of trusted directories."""

    def __init__(self, config_dir: Path | None = None) -> None:
        self.file = (config_dir or default_config_dir()) / TRUST_FILE

    def entries(self) -> list[TrustedDirectory]:
        try:
            raw = json.loads(self.file.read_text("utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            raise TrustError(f"cannot read the trust store {self.file}: {e}") from e
        items = raw.get("trusted", []) if isinstance(raw, dict) else []
        return [
            TrustedDirectory(Path(item["path"]), str(item.get("added", "")))
            for item in items
            if isinstance(item, dict) and isinstance(item.get("path"), str)
        ]

    def is_trusted(self, directory: Path) -> bool:
        target = directory.resolve()
        return any(target.is_relative_to(entry.path) for entry in self.entries())

    def add(self, directory: Path) -> Path:
        target = directory.resolve()
        if not target.is_dir():
            raise TrustError(f"{directory} is not a directory")
        entries = [e for e in self.entries() if e.path != target]
        entries.append(TrustedDirectory(target, datetime.now(UTC).isoformat(timespec="seconds")))
        self._write(entries)
        return target

    def remove(self, directory: Path) -> bool:
        target = directory.resolve()
        entries = self.entries()
        kept = [e for e in entries if e.path != target]
        if len(kept) == len(entries):
            return False
        self._write(kept)
        return True

    def _write(self, entries: list[TrustedDirectory]) -> None:
        payload = {"trusted": [{"path": str(e.path), "added": e.added} for e in entries]}
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.file, (json.dumps(payload, indent=2) + "\n").encode("utf-8"))
        except OSError as e:
            raise TrustError(f"cannot write the trust store {self.file}: {e}") from e


def check_trust(
    manifest: Manifest,
    trust: bool | None,
    ask: TrustPrompt | None = None,
    *,
    include_extensions: bool = True,
    store: TrustStore | None = None,
    children: Sequence[tuple[str, Manifest]] = (),
    extra: Sequence[ProjectCode] = (),
) -> None:
    """Refuse to go on when project code would run in an untrusted directory.

    `trust=True` is the caller's explicit decision (`--trust`, or an SDK user who
    knows the code); otherwise the user's trust store decides, then `ask` (an
    interactive question per directory), and without either the answer is no.
    `children` are the sub-agents below the manifest (path, manifest): their code is
    listed with the parent's, so one question per directory covers the whole team.
    `extra`: more code that would run on the project's say-so (an eval file's checks).
    """
    if trust is True:
        return
    code = [*project_code(manifest, include_extensions=include_extensions), *extra]
    for path, child in children:
        code.extend(
            ProjectCode(f"sub-agent {path}: {item.description}", item.root)
            for item in project_code(child, include_extensions=include_extensions)
        )
    if not code:
        return
    store = store or TrustStore()
    for root in dict.fromkeys(item.root for item in code):
        if store.is_trusted(root):
            continue
        # everything trusting `root` would cover, also what lies below it
        listing = list(
            dict.fromkeys(item.description for item in code if item.root.is_relative_to(root))
        )
        if trust is None and ask is not None and ask(root, listing):
            continue
        lines = "\n".join(f"  - {item}" for item in listing)
        raise TrustError(
            f"{root} is not a trusted directory, and building this agent would run code "
            "or send secrets on its say-so:\n"
            f"{lines}\n"
            f"Read that code, then trust the directory with `assemble trust add {root}` "
            "or pass --trust for this run."
        )
