"""Keep file tools inside the agent's workspace.

The model chooses the paths, so a path is treated as untrusted input. Confinement is
decided on *resolved* paths compared component by component (`Path.is_relative_to`),
never by string prefix: `/tmp/x/ws-evil` starts with the string `/tmp/x/ws` but is not
inside it. Symlinks are followed before the check, so a link inside the workspace that
points outside is refused, and a write through a dangling link is refused before
anything is created at its target.

What is not covered: a process racing the tool (swapping a directory for a symlink
between the check and the open). The agent's own `bash` tool can do far more than that
anyway; this guards against mistakes and prompt-injected paths, not a hostile local user.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from assembler.errors import ToolError


def workspace_root(workspace: Path) -> Path:
    """The workspace with symlinks resolved; every confinement check compares to this."""
    try:
        root = Path(os.path.realpath(os.path.abspath(workspace)))
    except (OSError, ValueError) as exc:
        raise ToolError(f"the workspace {workspace} cannot be resolved: {exc}") from exc
    if not root.is_dir():
        raise ToolError(f"the workspace {workspace} is not an existing directory")
    return root


def resolve_in_workspace(
    workspace: Path,
    user_path: str,
    *,
    for_write: bool = False,
    read_roots: Sequence[Path] = (),
) -> Path:
    """Turn a path the model gave into a real path inside `workspace`, or refuse.

    Relative paths are taken from the workspace; absolute paths are accepted when they
    land inside it. The parent directory is resolved first, then the last component on
    its own: when that component is a symlink, its target must exist and be inside the
    workspace (a write through a dangling link would otherwise create a file wherever
    the link points). The returned path has every symlink resolved, so callers open
    exactly the file that was checked. With `for_write`, the path must not be a
    directory (nor the workspace itself). Without `for_write`, a path inside one of
    `read_roots` (the skill directories) is accepted too, by the same resolved,
    component-wise test: a link or `..` leading out of a skill directory is refused.
    """
    root = workspace_root(workspace)
    if not user_path or not user_path.strip():
        raise ToolError("the path is empty")
    if "\x00" in user_path:
        raise ToolError("the path contains a NUL character")

    raw = Path(os.path.expanduser(user_path))
    candidate = raw if raw.is_absolute() else Path(os.path.abspath(workspace)) / raw
    resolved = _resolve(candidate, user_path)

    if not resolved.is_relative_to(root):
        reading = containing_root(resolved, read_roots)
        if reading is not None and not for_write:
            return resolved
        if reading is not None:
            raise ToolError(
                f"the path {user_path!r} is in the skill directory {reading}, which can be "
                "read but not changed; only files inside the workspace can be written"
            )
        raise ToolError(
            f"the path {user_path!r} resolves to {resolved}, which is outside the "
            f"workspace {root}; only files inside the workspace can be used"
        )
    if for_write and (resolved == root or resolved.is_dir()):
        raise ToolError(f"the path {user_path!r} is a directory, not a file")
    return resolved


def containing_root(path: Path, roots: Sequence[Path]) -> Path | None:
    """The first of `roots` (resolved here) that holds the resolved `path`, if any."""
    for root in roots:
        try:
            real = Path(os.path.realpath(root))
        except (OSError, ValueError):
            continue
        if path.is_relative_to(real):
            return real
    return None


def display_path(workspace: Path, path: Path) -> str:
    """How a resolved path is shown to the model: relative to the workspace, `/`-separated."""
    root = workspace_root(workspace)
    if path == root:
        return "."
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _resolve(candidate: Path, user_path: str) -> Path:
    """Resolve the parent, then the final component, refusing dangling final symlinks."""
    name = candidate.name
    try:
        if name in ("", ".", ".."):
            # `dir/..` or a bare root: there is no final component to treat specially.
            return Path(os.path.realpath(candidate))
        parent = Path(os.path.realpath(candidate.parent))
        final = parent / name
        if not final.is_symlink():
            return final
        target = Path(os.path.realpath(final))
    except (OSError, ValueError, RuntimeError) as exc:
        raise ToolError(f"the path {user_path!r} cannot be resolved: {exc}") from exc
    if not os.path.lexists(target) or target.is_symlink():
        raise ToolError(
            f"the path {user_path!r} is a symlink whose target {target} does not exist "
            "(a dangling or looping link); refusing to follow it"
        )
    return target
