"""Where a session's workspace started, and what its runs changed: so a run can be
rebuilt, replayed and compared (`assemble sessions to-test`, DESIGN.md section 17).

The header of a session built by `build_agent` gets `workspace_start`; each `run_end`
entry gets `workspace_end`, the files that differ from the start at that moment
(docs/sessions.md has the fields). For a git work tree the start is the commit, the
binary diff of the workspace against it, and the untracked files (their content, when
everything fits in `START_LIMIT`); anything else is recorded as not rebuildable, with
the reason, and converting it needs `--workspace DIR`.

Git runs as a plain reader: `--no-ext-diff --no-textconv`, `core.fsmonitor` off and
`GIT_OPTIONAL_LOCKS=0` (no index refresh written), with only the base environment
(`tools.environment.base_environment`), so a repository's own configuration cannot
start a program through it. A failure of git is a reason in the record, never a
failed run: the session is what matters, the record is a bonus.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from assembler.tools.environment import base_environment

START_LIMIT: Final = 1 << 20
"""Bytes of diff and untracked files a session header holds (1 MiB)."""
END_LIMIT: Final = 1 << 20
"""Bytes of changed files' contents one `workspace_end` holds."""
MAX_UNTRACKED: Final = 2000
GIT_TIMEOUT: Final = 10.0
_GIT_FLAGS: Final = ("-c", "core.fsmonitor=false", "-c", "core.quotepath=off")


class _GitFailed(Exception):
    """A git command failed or timed out; the message is the reason recorded."""


def _git(
    workspace: Path, *args: str, limit: int | None = None, flags: tuple[str, ...] = ()
) -> tuple[bytes, str, int]:
    """Run git in `workspace` (with `flags` before the command): (the first `limit`
    bytes of its output, the sha256 of all of it, its total size)."""
    env = base_environment(os.environ)
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        process = subprocess.Popen(
            ["git", *_GIT_FLAGS, *flags, *args],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except OSError as e:
        raise _GitFailed(f"git could not be started ({e.strerror or e})") from e
    assert process.stdout is not None and process.stderr is not None
    kept = bytearray()
    digest = hashlib.sha256()
    total = 0
    timer = threading.Timer(GIT_TIMEOUT, process.kill)  # a hung git must not hang the run
    timer.start()
    try:
        while chunk := process.stdout.read(65536):
            digest.update(chunk)
            total += len(chunk)
            if limit is None or len(kept) <= limit:
                kept += chunk
        error = process.stderr.read()
        code = process.wait(timeout=GIT_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        process.kill()
        process.wait()
        raise _GitFailed(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from e
    finally:
        timer.cancel()
        process.stdout.close()
        process.stderr.close()
    if code < 0:
        raise _GitFailed(f"git {args[0]} took over {GIT_TIMEOUT:g} s and was stopped")
    if code != 0:
        said = error.decode("utf-8", "replace").strip().splitlines()
        raise _GitFailed(f"git {args[0]} failed: {said[-1] if said else f'exit {code}'}")
    return bytes(kept), digest.hexdigest(), total


def _in_work_tree(workspace: Path) -> bool:
    """Whether a `.git` is in `workspace` or above it (checked before starting git,
    so a workspace outside any repository costs no process)."""
    return any((folder / ".git").exists() for folder in (workspace, *workspace.parents))


def no_filters(workspace: Path) -> tuple[str, ...]:
    """`-c` flags that empty every filter driver the repository's configuration names
    (`filter.NAME.clean`, `smudge`, `process`): comparing the work tree with a commit
    runs a file's clean filter, a program named in `.git/config`, which a file tool
    can write. Reading the configuration runs nothing."""
    try:
        out, _, _ = _git(workspace, "config", "-z", "--get-regexp", r"^filter\.")
    except _GitFailed:  # exit 1: no filter configured
        return ()
    names = {
        key.rpartition(".")[0].removeprefix("filter.")
        for key in (item.split("\n", 1)[0] for item in _names(out))
        if key.count(".") >= 2
    }
    flags: list[str] = []
    for name in sorted(names):
        for part, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            flags += ["-c", f"filter.{name}.{part}={value}"]
    return tuple(flags)


def _names(output: bytes) -> list[str]:
    return [name.decode("utf-8", "surrogateescape") for name in output.split(b"\0") if name]


def file_record(root: Path, relative: str, budget: int) -> dict[str, Any]:
    """One file as a record: `path`, `sha256` and `size`, its content as `text` (UTF-8)
    or `base64` when it fits in `budget`; `deleted` when it is not there; `link` (the
    target) for a symbolic link, never followed."""
    path = root / relative
    try:
        info = path.lstat()
    except OSError:
        return {"path": relative, "deleted": True}
    if path.is_symlink():
        target = os.readlink(path)
        return {"path": relative, "link": target, "sha256": _sha(b"link:" + os.fsencode(target))}
    if not path.is_file():
        return {"path": relative, "special": True}
    try:
        data = path.read_bytes()
    except OSError as e:
        return {"path": relative, "unreadable": e.strerror or str(e)}
    record: dict[str, Any] = {"path": relative, "sha256": _sha(data), "size": info.st_size}
    if len(data) <= budget:
        try:
            record["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            record["base64"] = base64.b64encode(data).decode("ascii")
    return record


def content_size(record: Mapping[str, Any]) -> int:
    """Bytes the content of a `file_record` takes (0 when it holds none)."""
    if "text" in record:
        return len(str(record["text"]).encode("utf-8"))
    if "base64" in record:
        return len(str(record["base64"])) * 3 // 4
    return 0


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_start(workspace: Path, *, limit: int = START_LIMIT) -> dict[str, Any]:
    """The header's `workspace_start` for `workspace` as it is now."""
    workspace = workspace.resolve()
    if not _in_work_tree(workspace):
        return _not_rebuildable(f"{workspace} is not in a git work tree")
    try:
        top, _, _ = _git(workspace, "rev-parse", "--show-toplevel")
        root = Path(top.decode("utf-8", "surrogateescape").rstrip("\n")).resolve()
        try:
            head, _, _ = _git(workspace, "rev-parse", "--verify", "HEAD^{commit}")
        except _GitFailed:
            return _not_rebuildable(f"the git work tree at {root} has no commit yet")
        commit = head.decode("ascii", "replace").strip()
        flags = no_filters(workspace)
        diff, diff_sha, diff_size = _git(
            workspace,
            "diff",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--relative",
            "HEAD",
            "--",
            ".",
            limit=limit,
            flags=flags,
        )
        dirty, _, _ = _git(
            workspace,
            *("diff", "--name-only", "-z", "--no-renames", "--relative", "HEAD", "--", "."),
            flags=flags,
        )
        untracked, _, _ = _git(workspace, "ls-files", "--others", "--exclude-standard", "-z")
    except _GitFailed as e:
        return _not_rebuildable(str(e))
    start: dict[str, Any] = {
        "kind": "git",
        "git_root": str(root),
        "path": workspace.relative_to(root).as_posix() if workspace != root else ".",
        "commit": commit,
        "diff_sha256": diff_sha,
        "diff_size": diff_size,
        "changed": [file_record(workspace, name, 0) for name in _names(dirty)],
        "untracked": [],
        "complete": True,
    }
    budget = limit - diff_size
    names = _names(untracked)
    if len(names) > MAX_UNTRACKED:
        return {**start, "complete": False, "reason": f"{len(names)} untracked files "
                f"(a session records at most {MAX_UNTRACKED})"}  # fmt: skip
    for name in names:
        record = file_record(workspace, name, max(0, budget))
        budget -= content_size(record) or record.get("size", 0)
        start["untracked"].append(record)
    if budget < 0:
        start["complete"] = False
        start["reason"] = (
            f"the changes on top of commit {commit[:12]} (diff and untracked files) are over "
            f"the {_size(limit)} a session records"
        )
    else:
        start["diff"] = diff.decode("utf-8", "surrogateescape")
    return start


def _size(limit: int) -> str:
    return f"{limit // 1024} KiB" if limit >= 1024 else f"{limit} bytes"


def _not_rebuildable(reason: str) -> dict[str, Any]:
    return {"kind": "directory", "complete": False, "reason": reason}


def record_end(
    workspace: Path,
    start: Mapping[str, Any] | None,
    touched: Iterable[str] = (),
    *,
    limit: int = END_LIMIT,
) -> dict[str, Any]:
    """`workspace_end`: every file that differs from the start now, with its content
    (within `limit`), or `deleted`. In a git work tree that is every change since the
    start, a command's included; elsewhere only the files the file tools wrote
    (`touched`, paths as the calls gave them)."""
    workspace = workspace.resolve()
    before: dict[str, str | None] = {}  # path -> sha256 at the start (None: absent)
    candidates: dict[str, None] = {}
    for name in touched:
        relative = _inside(workspace, name)
        if relative is not None:
            candidates[relative] = None
    git = start is not None and start.get("kind") == "git"
    changed_now: set[str] = set()
    if git:
        assert start is not None
        for record in (*start.get("changed", ()), *start.get("untracked", ())):
            before[str(record["path"])] = record.get("sha256")
            candidates[str(record["path"])] = None
        try:
            dirty, _, _ = _git(
                workspace, "diff", "--name-only", "-z", "--no-renames", "--relative",
                str(start["commit"]), "--", ".", flags=no_filters(workspace),
            )  # fmt: skip
            untracked, _, _ = _git(workspace, "ls-files", "--others", "--exclude-standard", "-z")
        except _GitFailed as e:
            return {"complete": False, "reason": str(e), "changed": []}
        changed_now = set(_names(dirty)) | set(_names(untracked))
        candidates.update(dict.fromkeys(sorted(changed_now)))
    changed: list[dict[str, Any]] = []
    budget = limit
    complete = True
    for name in candidates:
        record = file_record(workspace, name, max(0, budget))
        now = None if record.get("deleted") else record.get("sha256")
        if git and name in before:
            if before[name] == now:
                continue
        elif git and name not in changed_now:
            continue  # as in the commit, which is how it started
        budget -= content_size(record)
        if "sha256" in record and content_size(record) == 0 and record.get("size", 0) > 0:
            complete = False
        changed.append(record)
    return {"complete": complete, "changed": changed}


class TouchedFiles:
    """The files the file tools changed in a session (`write`, `edit`): what
    `workspace_end` holds outside a git work tree, and what it checks first inside."""

    WRITERS: Final = frozenset({"write", "edit"})

    def __init__(self) -> None:
        self._paths: dict[str, None] = {}

    def note(self, tool: str, arguments: Mapping[str, Any] | None) -> None:
        """A call that ran without error; only a file tool's `path` counts."""
        path = (arguments or {}).get("path")
        if tool in self.WRITERS and isinstance(path, str) and path:
            self._paths[path] = None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(self._paths)


def _inside(workspace: Path, name: str) -> str | None:
    """`name` (as a tool call gave it) relative to `workspace`, or None outside it."""
    path = Path(os.path.normpath(workspace / name))
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return None
