"""The workspace as a session found it, rebuilt in a task's fresh directory.

A session's header records a git work tree's start (`workspace_start`: the commit,
the diff on top of it, the untracked files; `sessions.workspace_record`). Converting
writes that as `<task>.start.json` beside the eval file; each task run rebuilds it:
`git archive` of the commit's workspace folder (from the repository the start file is
in), the diff applied with `git apply`, the untracked files written. Nothing is
taken from the developer's working tree, so the test sees what the session saw, on
any checkout that has the commit.

Git runs as in `workspace_record` (no external diff, no fsmonitor, a base
environment), the archive is unpacked with `tarfile`'s `data` filter (no absolute
paths, no links out, no devices), and untracked files are written only below the
workspace, never through a link.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from assembler.errors import ConversionError
from assembler.sessions.workspace_record import no_filters
from assembler.tools.environment import base_environment

GIT_TIMEOUT: Final = 60.0
_FLAGS: Final = ("-c", "core.fsmonitor=false", "-c", "core.quotepath=off")


def git(
    cwd: Path,
    *args: str,
    data: bytes | None = None,
    ceiling: Path | None = None,
    flags: tuple[str, ...] = (),
) -> bytes:
    """Run git (`flags` before the command); its output, or a `ConversionError` with
    its last error line."""
    env = base_environment(os.environ)
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    if ceiling is not None:  # never find a repository above a scratch directory
        env["GIT_CEILING_DIRECTORIES"] = str(ceiling)
    try:
        done = subprocess.run(
            ["git", *_FLAGS, *flags, *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            env=env,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError as e:
        raise ConversionError("git is not installed, and this workspace is rebuilt with it") from e
    except subprocess.TimeoutExpired as e:
        raise ConversionError(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from e
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ConversionError(f"git {args[0]} failed: {said[-1] if said else done.returncode}")
    return done.stdout


def repository_root(place: Path) -> Path:
    """The top of the git work tree `place` is in."""
    folder = place if place.is_dir() else place.parent
    while not folder.is_dir() and folder != folder.parent:  # an --out not written yet
        folder = folder.parent
    try:
        top = git(folder, "rev-parse", "--show-toplevel")
    except ConversionError as e:
        raise ConversionError(f"{folder} is not in a git work tree ({e})") from e
    return Path(top.decode("utf-8", "surrogateescape").strip()).resolve()


def has_commit(root: Path, commit: str) -> bool:
    try:
        git(root, "cat-file", "-e", f"{commit}^{{commit}}")
    except ConversionError:
        return False
    return True


def check_start(start: Mapping[str, Any], out: Path) -> None:
    """A start can be rebuilt where the test will live: the commit is in the repository
    that holds `out`. Otherwise one error saying what to do."""
    commit = str(start.get("commit", ""))
    root = repository_root(out)
    if has_commit(root, commit):
        return
    recorded = Path(str(start.get("git_root", "")))
    gone = "" if recorded.is_dir() else f" (the session's repository {recorded} is gone)"
    raise ConversionError(
        f"the session's workspace started at commit {commit[:12]}{gone}, and the "
        f"repository at {root} does not have it (a shallow clone? `git fetch --unshallow`); "
        "pass --workspace DIR with the files as they were when the session started"
    )


def load_start(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except OSError as e:
        raise ConversionError(f"cannot read the workspace start {path}: {e.strerror}") from e
    except ValueError as e:
        raise ConversionError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(data, dict) or data.get("kind") != "git" or not data.get("commit"):
        raise ConversionError(f"{path}: a workspace start names a git `commit` and its `path`")
    return data


def rebuild(start_file: Path, scratch: Path) -> Path:
    """The workspace of `start_file` rebuilt under the empty directory `scratch`."""
    start = load_start(start_file)
    root = repository_root(start_file)
    commit, inside = str(start["commit"]), str(start.get("path", "."))
    if not has_commit(root, commit):
        raise ConversionError(
            f"{start_file}: the commit {commit[:12]} is not in the repository at {root} "
            "(a shallow clone? `git fetch --unshallow`)"
        )
    name = Path(inside).name if inside not in ("", ".") else root.name
    workspace = scratch / (name or "workspace")
    workspace.mkdir()
    archive = git(
        root,
        *("archive", "--format=tar", commit, "--", inside if inside != "." else ":/"),
        flags=no_filters(root),  # the files as committed, no program of the config run
    )
    strip = 0 if inside in ("", ".") else len(Path(inside).parts)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = []
        for member in tar.getmembers():
            parts = Path(member.name).parts[strip:]
            if not parts:
                continue
            member.name = str(Path(*parts))
            members.append(member)
        tar.extractall(workspace, members=members, filter="data")
    diff = start.get("diff")
    if isinstance(diff, str) and diff:
        git(
            workspace,
            "apply",
            "--binary",
            "--whitespace=nowarn",
            "-",
            data=diff.encode("utf-8", "surrogateescape"),
            ceiling=scratch,
        )
    for record in start.get("untracked", ()):
        _write(workspace, record, start_file)
    return workspace


def _write(workspace: Path, record: Mapping[str, Any], origin: Path) -> None:
    """One untracked file of a start, below `workspace` and never through a link."""
    relative = Path(str(record.get("path", "")))
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ConversionError(f"{origin}: the untracked file {relative} is outside the workspace")
    target = workspace / relative
    for parent in reversed(target.parents):
        if parent.is_relative_to(workspace) and parent.is_symlink():
            raise ConversionError(f"{origin}: {relative} would be written through a link")
    target.parent.mkdir(parents=True, exist_ok=True)
    if "link" in record:
        os.symlink(str(record["link"]), target)
    elif "text" in record:
        target.write_bytes(str(record["text"]).encode("utf-8"))
    elif "base64" in record:
        target.write_bytes(base64.b64decode(str(record["base64"])))
    else:
        raise ConversionError(f"{origin}: the untracked file {relative} has no content")
