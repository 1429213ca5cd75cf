"""Which files a project's choices run, found the way the run will find them.

Trust is asked of the directory of the file that runs, not only of the manifest that
names it (`assembler.trust`). Two choices name such files indirectly:

- an MCP stdio server's `command` (`./server`, or a bare name found on a `PATH` the
  manifest may set) and the arguments that name files (`python server.py`), resolved
  against the directory the server starts in, as the process start resolves them;
- a `scripted:` replay, which chooses every tool call the agent makes: a replay that
  calls tools is code, one that only answers with text is not.

Nothing here runs, imports or starts anything: files are looked at, and a replay is
read as data (bounded, safe YAML).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from assembler.manifest.model import MCPServerSpec
from assembler.safe_read import FileRefused, read_small_text

MAX_REPLAY_BYTES = 16 * 1024 * 1024
"""A replay larger than this is not read to look for tool calls: it is taken as code."""


@dataclass(frozen=True)
class ServerFiles:
    """What an MCP stdio server runs: where it starts, and the files of the project
    it runs (its command, and arguments that name files), as they will resolve."""

    cwd: Path
    files: tuple[Path, ...]


def stdio_server_files(
    server: MCPServerSpec,
    workspace: Path,
    places: Sequence[Path],
    parent_env: Mapping[str, str] | None = None,
) -> ServerFiles:
    """The files of the project that starting `server` would run.

    `places` are the project directories (the manifest's, the workspace): a file in
    one of them is the project's. A
    command written as a path (`./server`, `bin/serve`) is the project's choice of
    file wherever it resolves, even when it does not exist yet (the agent may write
    it before the server starts). A bare name is looked up on the `PATH` the server
    gets (the manifest's `env.PATH`, else the user's), relative entries against the
    server's directory, as `execvp` does; found through a `PATH` the manifest set, in
    a directory the user's own `PATH` does not name, it is the project's choice too.
    """
    cwd = Path(os.path.abspath(server.cwd or workspace))
    inside = [Path(os.path.abspath(p)) for p in places]
    files: list[Path] = []
    command = server.command or ""
    if "/" in command:
        files.append(Path(os.path.normpath(cwd / command)))
    elif command:
        found = _on_path(command, server.env, parent_env, cwd)
        chosen = "PATH" in server.env and not _on_users_path(found, parent_env)
        if found is not None and (_in_any(found, inside) or chosen):
            files.append(found)
    for argument in server.args:
        if not argument or argument.startswith("-"):
            continue
        candidate = Path(os.path.normpath(cwd / argument))
        try:
            is_file = candidate.is_file()
        except OSError:
            continue
        if is_file and _in_any(candidate, inside):
            files.append(candidate)
    return ServerFiles(cwd, tuple(dict.fromkeys(files)))


def _on_path(
    command: str, declared: Mapping[str, str], parent: Mapping[str, str] | None, cwd: Path
) -> Path | None:
    search = declared.get("PATH")
    if search is None:
        search = (os.environ if parent is None else parent).get("PATH", os.defpath)
    entries = [entry if os.path.isabs(entry) else str(cwd / entry) for entry in search.split(":")]
    found = shutil.which(command, path=os.pathsep.join(entries))
    return Path(os.path.abspath(found)) if found else None


def _on_users_path(found: Path | None, parent: Mapping[str, str] | None) -> bool:
    """Whether `found` sits in a directory of the user's own `PATH` (absolute entries):
    a program the user would run anyway, whatever `PATH` the manifest sets."""
    if found is None:
        return False
    search = (os.environ if parent is None else parent).get("PATH", os.defpath)
    return any(
        os.path.isabs(entry) and Path(os.path.abspath(entry)) == found.parent
        for entry in search.split(os.pathsep)
    )


def _in_any(path: Path, places: Sequence[Path]) -> bool:
    """In (or below) one of `places`, as the path sits or where it leads."""
    seen = [path]
    bases = list(places)
    try:
        seen.append(path.resolve())
        bases += [place.resolve() for place in places]
    except OSError:
        pass
    return any(p.is_relative_to(base) for p in seen for base in bases)


@dataclass(frozen=True)
class ReplayCalls:
    """What a replay script would make the agent do: the tools it calls (empty: text
    only), or why it could not be read to tell (then it counts as calling tools)."""

    tools: tuple[str, ...] = ()
    unreadable: str = ""

    @property
    def runs_code(self) -> bool:
        return bool(self.tools or self.unreadable)


def replay_calls(script: Path) -> ReplayCalls | None:
    """The tool calls of the replay at `script`; None when there is no such file (the
    build then fails on its own, and nothing from it runs), or when it is not a
    script the provider would load. Parsed once per content (a sub-agent is built
    for every call, and its replay read each time)."""
    try:
        text = read_small_text(script, MAX_REPLAY_BYTES)
    except FileNotFoundError:
        return None
    except (FileRefused, OSError) as e:
        return ReplayCalls(unreadable=str(e))
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = _calls_in(text)
    return _PARSED[key]


_PARSED: dict[str, ReplayCalls | None] = {}
_PARSED_MAX = 256
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _calls_in(text: str) -> ReplayCalls | None:
    try:
        raw = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        return None  # not a script the provider would load: it fails, nothing runs
    if isinstance(raw, Mapping) and "steps" in raw:
        raw = raw["steps"]
    if not isinstance(raw, list):
        return None
    names: list[str] = []
    for step in raw:
        calls = step.get("tool_calls") if isinstance(step, Mapping) else None
        for call in calls if isinstance(calls, list) else ():
            name = call.get("name") if isinstance(call, Mapping) else None
            names.append(name if isinstance(name, str) else "?")
    return ReplayCalls(tuple(dict.fromkeys(names)))
