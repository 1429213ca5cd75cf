"""A fresh copy of the workspace for every task run, and the agent pointed at it.

The source directory is only ever read. The copy keeps symbolic links as links
(`copytree(symlinks=True)`), so a link out of the workspace is not followed and
copied; the file tools refuse to follow it out of the copy anyway.

`rebase` moves what the manifest keeps *in* its workspace (the workspace itself, skill
directories and the memory store below it) onto the copy. Code stays where it was
trusted: the manifest's path, extension files, Python tools and replay scripts are not
moved, so a project module is imported from one file for every task run (importing
the same module name from a second path would be refused as shadowing).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from assembler.agent.team import TeamMember
from assembler.manifest.model import Manifest
from assembler.permissions.path_patterns import PathPattern

_CHUNK = 1 << 20
SCRATCH_PREFIX = "assemble-eval-"


def scratch_directory() -> Path:
    """A new private temporary directory for one run's copy, named for this host and
    process (`assemble-eval-HOST-PID-xxxxxxxx`), so that `sweep_stale` can tell a copy
    whose process was killed before it could remove it."""
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{_host()}-{os.getpid()}-"))


def sweep_stale(root: Path | None = None) -> int:
    """Remove the copies that processes of this host left when they died (a Dask
    worker killed mid-run); copies of live processes and other hosts are left alone."""
    removed = 0
    base = root or Path(tempfile.gettempdir())
    prefix = f"{SCRATCH_PREFIX}{_host()}-"
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(prefix) and e.is_dir()]
    except OSError:
        return 0
    for entry in entries:
        pid = entry.name[len(prefix) :].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def copy_workspace(source: Path, scratch: Path) -> Path:
    """Copy `source` into the empty directory `scratch`, under its own name (so paths
    the agent sees read naturally), and return the copy."""
    target = scratch / (source.resolve().name or "workspace")
    shutil.copytree(source, target, symlinks=True)
    return target


def rebase(manifest: Manifest, workspace: Path) -> Manifest:
    """`manifest` working in `workspace`: its workspace and what lives inside it
    (skill directories, the memory store) moved there; everything else as it was."""
    old = Path(os.path.normpath(manifest.workspace.absolute()))
    new = workspace.absolute()

    def move(path: Path) -> Path:
        absolute = Path(os.path.normpath(path.absolute()))
        return new / absolute.relative_to(old) if absolute.is_relative_to(old) else path

    memory = manifest.memory
    if memory is not None:
        memory = replace(memory, store=move(memory.store))
    return replace(
        manifest,
        workspace=new,
        skills=tuple(move(path) for path in manifest.skills),
        memory=memory,
    )


def rebase_team(member: TeamMember, old: Path, new: Path) -> TeamMember:
    """The agent tree `member` with every agent that works in `old` (or below it) moved
    to `new`: a sub-agent with a workspace of its own that is the task's workspace must
    work in the copy too, or it would change the original."""
    old = Path(os.path.normpath(old.absolute()))

    def move(manifest: Manifest) -> Manifest:
        workspace = Path(os.path.normpath(manifest.workspace.absolute()))
        if workspace.is_relative_to(old):
            manifest = rebase(manifest, new / workspace.relative_to(old))
        if manifest.sandbox is not None:  # a sandbox inherited from an agent in `old` moves too
            manifest = replace(manifest, sandbox=manifest.sandbox.moved(old, new))
        return manifest

    return member.mapped(move)


def digests(root: Path, patterns: Iterable[PathPattern]) -> dict[str, str]:
    """sha256 of every file below `root` that a pattern matches, by relative path
    (`/`-separated). A symbolic link counts as its target's text, never followed."""
    wanted = tuple(patterns)
    if not wanted:
        return {}
    found: dict[str, str] = {}
    for directory, subdirectories, files in os.walk(root):
        here = Path(directory)
        links = [d for d in subdirectories if (here / d).is_symlink()]
        subdirectories[:] = sorted(d for d in subdirectories if d not in links)
        for name in (*files, *links):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if any(pattern.matches(relative) for pattern in wanted):
                found[relative] = _digest(path)
    return found


def _digest(path: Path) -> str:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "link:" + os.readlink(path)
    if not stat.S_ISREG(info.st_mode):
        return f"special:{stat.S_IFMT(info.st_mode)}"
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def differences(
    before: Mapping[str, str], after: Mapping[str, str], patterns: Iterable[PathPattern]
) -> tuple[list[str], list[str], list[str]]:
    """(changed, removed, added) paths, among those a pattern matches."""
    wanted = tuple(patterns)

    def keep(path: str) -> bool:
        return any(pattern.matches(path) for pattern in wanted)

    changed = sorted(p for p in before if p in after and before[p] != after[p] and keep(p))
    removed = sorted(p for p in before if p not in after and keep(p))
    added = sorted(p for p in after if p not in before and keep(p))
    return changed, removed, added
