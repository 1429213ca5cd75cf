"""Checks of the `sandbox:` block: paths, hosts, contradictions, and sub-agents that widen.

A block the schema accepted can still say two things at once (`writable` under
`read-only`, `allow_hosts` without `network: allow`, a hidden path inside the
workspace, which the file tools would still read), name a path that is not there, or
give a sub-agent more reach than its parent: each is reported at its line. A
sandboxed agent whose Python tools are not listed in `unconfined` gets a warning:
they run in the agent's own process, where no sandbox reaches. Like every check,
nothing is imported or started.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.errors import Issue
from assembler.manifest.yaml_source import JsonPath
from assembler.sandbox.spec import (
    DEFAULT_HIDDEN,
    HostRule,
    SandboxSpec,
    expand,
    for_child,
    inside,
    real,
)
from assembler.validation.context import CheckContext, exists, items, mapping


@dataclass(frozen=True)
class ParentSandbox:
    """What a sub-agent is checked against: its parent's effective sandbox and
    workspace, and whether the sub-agent works there too (`workspace: inherit`)."""

    spec: SandboxSpec
    workspace: Path
    shared_workspace: bool = False

    def child_workspace(self, ctx: CheckContext) -> Path:
        return self.workspace if self.shared_workspace else ctx.workspace()


def own_sandbox(data: Mapping[str, Any]) -> SandboxSpec | None:
    """The manifest's `sandbox:` block as a spec, or None (none, or not valid)."""
    return _spec(data.get("sandbox"))


def effective_sandbox(
    ctx: CheckContext, parent: ParentSandbox | None, entry: Mapping[str, Any]
) -> ParentSandbox | None:
    """What the sub-agent of `entry` (an `agent:` tool set of this manifest) is checked
    against: this manifest's own block, or the one it inherited."""
    mine = own_sandbox(ctx.data)
    workspace = parent.child_workspace(ctx) if parent is not None else ctx.workspace()
    spec = mine
    if parent is not None:
        spec, _ = for_child(parent.spec, parent.workspace, mine, workspace)
    if spec is None:
        return None
    return ParentSandbox(spec, workspace, entry.get("workspace") == "inherit")


def check_sandbox(ctx: CheckContext, parent: ParentSandbox | None = None) -> Iterator[Issue]:
    """Every problem of the agent's block, its MCP servers' blocks, and its reach
    compared with its parent's."""
    raw = ctx.data.get("sandbox")
    if isinstance(raw, dict):
        yield from _check_block(ctx, raw, ("sandbox",))
    for name, server in mapping(mapping(ctx.data.get("tools")).get("servers")).items():
        block = mapping(server).get("sandbox")
        if isinstance(block, dict):
            yield from _check_block(ctx, block, ("tools", "servers", name, "sandbox"))
    for index, item in enumerate(items(mapping(ctx.data.get("tools")).get("sets"))):
        block = mapping(mapping(item).get("mcp")).get("sandbox")
        if isinstance(block, dict):
            yield from _check_block(ctx, block, ("tools", "sets", index, "mcp", "sandbox"))
    spec = _spec(raw)
    if parent is not None and spec is not None:
        workspace = parent.child_workspace(ctx)
        _, problems = for_child(parent.spec, parent.workspace, spec, workspace)
        for problem in problems:
            yield ctx.issue(
                ("sandbox",),
                f"a sub-agent may only narrow its parent's sandbox: {problem}",
            )
    confined = spec if spec is not None else (parent.spec if parent is not None else None)
    if confined is not None and confined.confines:
        yield from _check_python_tools(ctx, spec.unconfined if spec is not None else ())


def _check_block(ctx: CheckContext, raw: Mapping[str, Any], at: JsonPath) -> Iterator[Issue]:
    spec = _spec(raw)
    if spec is None:
        return  # the schema says what is wrong
    if spec.writable and spec.filesystem != "workspace-write":
        yield ctx.issue(
            (*at, "writable"),
            f"`writable` needs `filesystem: workspace-write` (with `{spec.filesystem}` "
            + ("nothing is confined" if spec.filesystem == "off" else "only $TMPDIR is writable")
            + ")",
        )
    if spec.hidden and spec.filesystem == "off":
        yield ctx.issue(
            (*at, "hidden"), "`hidden` needs a file-system sandbox: `filesystem: off` hides nothing"
        )
    if spec.allow_hosts and spec.network != "allow":
        yield ctx.issue(
            (*at, "allow_hosts"),
            f"`allow_hosts` needs `network: allow` (with `network: {spec.network}` it is ignored)",
        )
    if spec.network == "allow" and not spec.allow_hosts:
        yield ctx.issue(
            (*at, "network"),
            "`network: allow` with no `allow_hosts` reaches nothing: list the hosts, "
            "or write `network: off`",
        )
    for index, host in enumerate(spec.allow_hosts):
        try:
            HostRule.parse(host)
        except ValueError as e:
            yield ctx.issue((*at, "allow_hosts", index), str(e))
    if spec.filesystem != "off":
        yield from _check_paths(ctx, spec, at)


def _check_paths(ctx: CheckContext, spec: SandboxSpec, at: JsonPath) -> Iterator[Issue]:
    workspace = real(ctx.workspace())
    home = os.path.expanduser("~")
    base = Path(workspace)
    hidden = [(real(expand(p, base, home)), p, i) for i, p in enumerate(spec.hidden)]
    defaults = [(real(expand(p, base, home)), p, None) for p in DEFAULT_HIDDEN]
    for path, written, index in [*hidden, *defaults]:
        where: JsonPath = (*at, "hidden", index) if index is not None else (*at, "filesystem")
        if inside(path, workspace):
            yield ctx.issue(
                where,
                f"hidden `{written}` is inside the workspace, where the agent's file tools "
                "(which run in its own process) still read it: move it out, or add a "
                f"`deny: read(...)` permission rule",
            )
        elif inside(workspace, path):
            yield ctx.issue(where, f"hidden `{written}` holds the workspace itself")
    for index, written in enumerate(spec.writable if spec.filesystem == "workspace-write" else ()):
        path = real(expand(written, base, home))
        where = (*at, "writable", index)
        if path == "/":
            yield ctx.issue(
                where, "`/` makes everything writable: write `filesystem: off` to say so"
            )
            continue
        covering = next((w for h, w, _ in [*hidden, *defaults] if inside(path, h)), None)
        if covering is not None:
            yield ctx.issue(where, f"`{written}` is inside the hidden `{covering}`")
        elif not exists(Path(path)):
            yield ctx.issue(
                where,
                f"`{written}` does not exist; the sandbox can only grant writing where a "
                "path exists when a command starts (create it first)",
                "warning",
            )


def _check_python_tools(ctx: CheckContext, unconfined: tuple[str, ...]) -> Iterator[Issue]:
    declared: list[tuple[str, JsonPath]] = []
    for index, item in enumerate(items(mapping(ctx.data.get("tools")).get("sets"))):
        raw = mapping(item).get("python")
        entries = raw if isinstance(raw, list) else [raw] if raw is not None else []
        for position, entry in enumerate(entries):
            at: JsonPath = ("tools", "sets", index, "python")
            if isinstance(raw, list):
                at = (*at, position)
            reference = entry if isinstance(entry, str) else mapping(entry).get("function")
            if isinstance(reference, str):
                declared.append((reference, at))
    for reference, at in declared:
        if reference not in unconfined:
            yield ctx.issue(
                at,
                f"Python tool `{reference}` runs in the agent's own process, outside the "
                "sandbox: review it, then list it under `sandbox.unconfined`",
                "warning",
            )
    names = {reference for reference, _ in declared}
    for index, reference in enumerate(unconfined):
        if reference not in names:
            yield ctx.issue(
                ("sandbox", "unconfined", index),
                f"`{reference}` is not one of this agent's Python tools",
                "warning",
            )


def _spec(raw: Any) -> SandboxSpec | None:
    """A spec from a block that may not be valid (None when it is not)."""
    if not isinstance(raw, dict) or raw.get("filesystem") not in (
        "read-only",
        "workspace-write",
        "off",
        False,
    ):
        return None
    if raw.get("network", "off") not in ("off", "allow", "on", False, True):
        return None
    lists = ("writable", "hidden", "allow_hosts", "unconfined")
    if any(not all(isinstance(v, str) for v in items(raw.get(k, []))) for k in lists):
        return None
    if any(k in raw and not isinstance(raw[k], list) for k in lists):
        return None
    return SandboxSpec.from_data(raw)
