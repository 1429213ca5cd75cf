"""Everything about trust: which project code an agent would run, the user's store of
trusted directories, the check that refuses to build before that code runs, and the
decision later builds are held to.

Project code (extension files and modules, Python tools whose source is in the
project, MCP stdio servers a project manifest declares, `scripted:` replays that
call tools) runs only in a trusted directory (DESIGN.md sections 7 and 15), and
trust is decided before any repo-local code runs, for a whole agent tree at once
(`assembler.agent.trusting.decide_trust`). The directory of the file that runs must
be trusted, not only the manifest's that names it (`assembler.trust_files` finds
those files). Trust is the user's decision, stored outside any project
(`<config dir>/trust.json`), keyed by the resolved directory; a manifest cannot grant
it and a checkout cannot ship it. Trusting a directory trusts everything beneath it.

Code is looked up in the manifest's directory, then the workspace. Both are project
directories, and each one that holds code to run must be trusted: trusting `agents/`
does not let a module the agent itself wrote into its workspace run next time.
Installed modules and entry points are the user's own environment and need no trust.

A `TrustDecision` records the manifests and the sha256 of every file of code it
covered: a build on it later (a sub-agent, an eval task, a reload) runs only code it
saw, so a file changed during a run needs trust again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assembler.errors import TrustError
from assembler.files import atomic_write
from assembler.manifest.model import Manifest, MCPServerSpec, MCPToolSet, PythonToolSet
from assembler.python_refs import locate_module
from assembler.trust_files import replay_calls, stdio_server_files
from assembler.urls import display_url, is_local_url
from assembler.user_dirs import default_config_dir

TRUST_FILE = "trust.json"

TrustPrompt = Callable[[Path, list[str]], bool]
"""Asks the user whether to trust a directory, showing the code that would run there."""


@dataclass(frozen=True)
class ProjectCode:
    """One piece of project code and the directory whose trust it needs; `files` are
    the files whose content runs (what a `TrustDecision` fingerprints)."""

    description: str
    root: Path
    files: tuple[Path, ...] = ()


def code_roots(manifest: Manifest) -> list[Path]:
    """Where project modules are looked up, in order: the manifest's directory, then
    the workspace (used alike by validation, trust and import)."""
    return list(dict.fromkeys([manifest.directory.resolve(), manifest.workspace.resolve()]))


def project_code(
    manifest: Manifest,
    *,
    include_extensions: bool = True,
    model: str | None = None,
    replays: bool = True,
) -> list[ProjectCode]:
    """What building this agent would run or send on the project's say-so, each with
    the directory whose trust it needs: project code, and network destinations the
    manifest picks that receive the user's secrets (a `${VAR}` in a URL or header,
    or the API key sent to a `base_url` that is not on this machine).

    A file that runs needs its own directory trusted as well as the manifest's (the
    manifest chose it; the file's directory holds what runs). `model` is the model
    the agent is built with instead of the manifest's (`--model`); `replays=False`
    when the caller gives a ready model provider, so no replay file is read.
    """
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
        files = tuple(dict.fromkeys(p for p in (location.path, location.target) if p))
        for root in location.roots:
            found.append(ProjectCode(f"{what} ({shown})", root, files))

    for extension in manifest.extensions if include_extensions else ():
        if extension.kind == "path" and extension.path is not None:
            description = f"extension file {_relative(extension.path, manifest_dir)}"
            found.extend(_file_code(description, extension.path, manifest_dir))
        elif extension.kind == "module":
            module_in_project(extension.target, f"extension module {extension.target}")
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, PythonToolSet):
            for tool in tool_set.tools:
                module_in_project(tool.function.partition(":")[0], f"Python tool {tool.function}")
        elif isinstance(tool_set, MCPToolSet) and tool_set.server.command:
            found.extend(_stdio_server(tool_set.server, manifest, roots))
        elif isinstance(tool_set, MCPToolSet) and tool_set.server.network_variables:
            server = tool_set.server
            found.append(
                ProjectCode(
                    f"MCP server `{server.name}` sends {_variables(server.network_variables)} "
                    f"to {display_url(server.url_template or '')}",
                    manifest_dir,
                )
            )
    if replays:
        found.extend(replay_code(manifest, model))
    found.extend(_model_endpoint(manifest, manifest_dir))
    return list(dict.fromkeys(found))


def replay_code(manifest: Manifest, model: str | None = None) -> list[ProjectCode]:
    """A `scripted:` replay that calls tools chooses every call the agent makes, so it
    is code: the manifest's own replay, or the one `model` (`--model`, an eval task's
    model) names, relative to the manifest as the build finds it."""
    script: Path | None = None
    if model is not None:
        provider, _, name = model.partition(":")
        if provider == "scripted" and name:
            script = manifest.directory / name
    elif manifest.model is not None and manifest.model.provider == "scripted":
        spec = manifest.model
        script = spec.script if spec.script is not None else manifest.directory / spec.name
    if script is None:
        return []
    script = Path(os.path.normpath(script.absolute()))
    calls = replay_calls(script)
    if calls is None or not calls.runs_code:
        return []
    shown = _relative(script, manifest.directory.resolve())
    what = (
        f"calls {', '.join(calls.tools)}"
        if calls.tools
        else f"cannot be read to check its tool calls: {calls.unreadable}"
    )
    chosen_by = manifest.directory.resolve() if model is None else None
    return _file_code(f"replay script {shown} ({what})", script, chosen_by)


def _stdio_server(
    server: MCPServerSpec, manifest: Manifest, roots: list[Path]
) -> list[ProjectCode]:
    """An MCP stdio server: the manifest chose the command; the directory it starts in
    (when that is a project directory: `npx`, `python -m` and a relative `PATH` run
    what is there) and the directory of each project file it runs hold what runs."""
    manifest_dir = roots[0]
    description = f"MCP server `{server.name}` (command `{server.command}`)"
    started = stdio_server_files(server, manifest.workspace, roots)
    found = [ProjectCode(description, manifest_dir)]
    cwd = _resolved(started.cwd)
    if any(cwd.is_relative_to(root) for root in roots):  # a project directory
        found.append(ProjectCode(f"{description} starts in {started.cwd}", cwd))
    for file in started.files:
        shown = _relative(file, manifest_dir)
        found.extend(_file_code(f"{description} runs {shown}", file, None))
    return found


def _file_code(description: str, file: Path, chosen_by: Path | None) -> list[ProjectCode]:
    """A file that runs: the directory that chose it (if any) and the directories
    the file sits in and leads to must be trusted."""
    sits = Path(os.path.normpath(file.absolute()))
    leads = _resolved(sits)
    files = tuple(dict.fromkeys((sits, leads)))
    dirs = [chosen_by] if chosen_by is not None else []
    dirs += [_resolved(sits.parent), leads.parent]
    return [ProjectCode(description, d, files) for d in dict.fromkeys(dirs)]


def _resolved(path: Path) -> Path:
    """`path` resolved, or as it is when it cannot be (a symlink loop: Python 3.11
    raises RuntimeError for it, later versions OSError)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


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
    """Refuse to go on when project code of `manifest` (and of `children`, the
    sub-agents below it as (path, manifest)) would run in an untrusted directory.
    See `require_trust`; `assembler.agent.trusting.decide_trust` is what builds use."""
    if trust is True:
        return
    code = [*project_code(manifest, include_extensions=include_extensions), *extra]
    for path, child in children:
        code.extend(
            sub_agent_code(path, project_code(child, include_extensions=include_extensions))
        )
    require_trust(code, trust, ask, store=store)


def sub_agent_code(path: str, code: Sequence[ProjectCode]) -> list[ProjectCode]:
    """A sub-agent's code, named as the trust question lists it."""
    return [ProjectCode(f"sub-agent {path}: {c.description}", c.root, c.files) for c in code]


def require_trust(
    code: Sequence[ProjectCode],
    trust: bool | None,
    ask: TrustPrompt | None = None,
    *,
    store: TrustStore | None = None,
) -> None:
    """Refuse to go on when some of `code` needs a directory nobody trusted.

    `trust=True` is the caller's explicit decision (`--trust`, or an SDK user who
    knows the code); otherwise the user's trust store decides, then `ask` (an
    interactive question per directory, listing everything trusting it would cover),
    and without either the answer is no.
    """
    if trust is True or not code:
        return
    store = store or TrustStore()
    granted: list[Path] = []
    # a directory before the ones inside it: one answer covers what lies below
    roots = sorted(dict.fromkeys(item.root for item in code), key=lambda r: len(r.parts))
    for root in roots:
        if any(root.is_relative_to(done) for done in granted) or store.is_trusted(root):
            continue
        # everything trusting `root` would cover, also what lies below it
        listing = list(
            dict.fromkeys(item.description for item in code if item.root.is_relative_to(root))
        )
        if trust is None and ask is not None and ask(root, listing):
            granted.append(root)
            continue
        lines = "\n".join(f"  - {item}" for item in listing)
        raise TrustError(
            f"{root} is not a trusted directory, and building this agent would run code "
            "or send secrets on its say-so:\n"
            f"{lines}\n"
            f"Read that code, then trust the directory with `assemble trust add {root}` "
            "or pass --trust for this run."
        )


@dataclass(frozen=True)
class TrustDecision:
    """Trust as decided for one agent tree, for the builds that come after it.

    It names the manifests it was decided for and a fingerprint (sha256) of every file
    of code it covered, as the files were when it was decided. A later build with it
    (a sub-agent built for a call, an eval task in a copy of the workspace, a reload)
    runs only code it saw: a manifest outside the tree, or a file that changed since
    (the agent may have rewritten its own extension), needs trust again. Content, not
    place, is compared, so an eval's copy of the workspace holds the same code.
    """

    manifests: frozenset[Path]
    digests: frozenset[str]
    include_extensions: bool = True

    @classmethod
    def of(
        cls, manifests: Sequence[Path], code: Sequence[ProjectCode], include_extensions: bool
    ) -> TrustDecision:
        files = dict.fromkeys(f for item in code for f in item.files)
        digests = {d for f in files if (d := file_digest(f)) is not None}
        return cls(
            frozenset(m.resolve() for m in manifests), frozenset(digests), include_extensions
        )

    def unseen(
        self, manifests: Sequence[Path], code: Sequence[ProjectCode], include_extensions: bool
    ) -> list[str]:
        """What of this build the decision did not cover, described (empty: all of it)."""
        problems = [
            f"the manifest {m} was not part of the agent tree trust was decided for"
            for m in dict.fromkeys(p.resolve() for p in manifests)
            if m not in self.manifests
        ]
        if include_extensions and not self.include_extensions:
            problems.append("extensions were switched off when trust was decided")
        for item in code:
            for file in item.files:
                digest = file_digest(file)
                if digest is not None and digest not in self.digests:
                    problems.append(f"{item.description}: {file} changed since it was trusted")
        return list(dict.fromkeys(problems))

    def to_dict(self) -> dict[str, object]:
        """Plain data, for a worker process that builds on this decision."""
        return {
            "manifests": sorted(str(m) for m in self.manifests),
            "digests": sorted(self.digests),
            "include_extensions": self.include_extensions,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> TrustDecision:
        manifests, digests = data.get("manifests"), data.get("digests")
        return cls(
            frozenset(Path(str(m)) for m in (manifests if isinstance(manifests, list) else [])),
            frozenset(str(d) for d in (digests if isinstance(digests, list) else [])),
            bool(data.get("include_extensions", True)),
        )


def file_digest(path: Path) -> str | None:
    """sha256 of a regular file's content; None when there is none (no file, or a
    device or FIFO, opened without blocking and never read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)
