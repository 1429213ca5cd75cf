"""Sub-agents in `assemble validate`: the tree of manifests an agent delegates to.

Each `agent:` tool set names another manifest, which is validated here in turn and
reports its problems at its own file:line:col, so a team is checked as a whole in
CI. The chain of manifests above the one being checked is carried down: a manifest
already on it is a cycle (an error naming the chain, `a.yaml -> b.yaml -> a.yaml`),
and the strictest `limits.max_agent_depth` along it bounds how deep the tree may go.
Like every check, nothing is imported, started or connected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assembler.errors import Issue
from assembler.manifest.loader import parse_manifest
from assembler.manifest.model import TOOL_NAME, AgentToolSet, Limits, Manifest
from assembler.manifest.yaml_source import JsonPath
from assembler.validation.checks import CheckContext
from assembler.validation.io_checks import check_subagent_params
from assembler.validation.sandbox import ParentSandbox, effective_sandbox

DEFAULT_MAX_DEPTH = Limits().max_agent_depth
CYCLE = "sub-agents form a cycle"


@dataclass(frozen=True)
class Lineage:
    """The manifests above the one being validated (root first), how many more
    levels of sub-agents their limits allow below it (None: it is the root), and
    whose `max_agent_depth` set that bound."""

    chain: tuple[Path, ...] = ()
    remaining: int | None = None
    limited_by: Path | None = None
    sandbox: ParentSandbox | None = None
    """The parent's effective sandbox and workspace: a sub-agent may only narrow it."""


ROOT = Lineage()


class ChildReport(Protocol):
    """What validating a sub-agent's manifest gives back (a `FileReport`)."""

    @property
    def issues(self) -> tuple[Issue, ...]: ...
    @property
    def manifest(self) -> Manifest | None: ...


class ValidateChild(Protocol):
    def __call__(self, path: Path, /, *, lineage: Lineage) -> ChildReport: ...


def agent_entries(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """The `agent:` tool sets of a raw document, with their index in `tools.sets`."""
    tools = data.get("tools")
    sets = tools.get("sets") if isinstance(tools, dict) else None
    return [
        (index, item)
        for index, item in enumerate(sets if isinstance(sets, list) else [])
        if isinstance(item, dict) and isinstance(item.get("agent"), str)
    ]


def own_depth_limit(data: Mapping[str, Any]) -> int:
    limits = data.get("limits")
    value = limits.get("max_agent_depth") if isinstance(limits, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_MAX_DEPTH


def check_agent_tree(
    ctx: CheckContext, lineage: Lineage, validate: ValidateChild
) -> Iterator[Issue]:
    """Validate every sub-agent of `ctx`'s manifest (recursively, through `validate`)
    and record the tool names they give it in `ctx.subagent_tools`."""
    entries = agent_entries(ctx.data)
    if not entries:
        return
    here = ctx.path.resolve()
    chain = (*lineage.chain, here)
    own = own_depth_limit(ctx.data)
    remaining, limited_by = lineage.remaining, lineage.limited_by
    if remaining is None or own < remaining:
        remaining, limited_by = own, here
    for index, item in entries:
        at = ("tools", "sets", index, "agent")
        written = item["agent"]
        explicit = item.get("name") if isinstance(item.get("name"), str) else None
        if explicit:
            ctx.subagent_tools.append(explicit)
        target = ctx.resolve(written)
        if not target.is_file():
            state = "is not a file" if target.exists() else "not found"
            yield ctx.issue(at, f"sub-agent manifest {written} {state}")
            continue
        resolved = target.resolve()
        child: Manifest | None
        if resolved in chain or remaining < 1:
            if resolved in chain:
                yield cycle_issue(ctx, at, (*chain[chain.index(resolved) :], resolved))
            else:
                allowed = len(chain) - 1 + remaining
                yield ctx.issue(
                    at,
                    f"sub-agent {written} is too deep: {describe_chain((*chain, resolved))} "
                    f"nests {len(chain)} level{'' if len(chain) == 1 else 's'} of sub-agents, "
                    "and `limits.max_agent_depth` of "
                    f"{shown_path(limited_by or here)} allows {allowed}",
                )
            child = parse_manifest(target, unset_variables="warning").manifest  # its name only
        else:
            report = validate(
                target,
                lineage=Lineage(
                    chain, remaining - 1, limited_by, effective_sandbox(ctx, lineage.sandbox, item)
                ),
            )
            yield from report.issues
            errors = sum(
                1
                for issue in report.issues
                if issue.severity == "error" and not issue.message.startswith(CYCLE)
            )
            if errors:  # a cycle is one error, naming every manifest on it: no echo here
                count = f"{errors} error{'' if errors == 1 else 's'}"
                yield ctx.issue(at, f"sub-agent {written} has {count} (reported at its own lines)")
            child = report.manifest
        if child is not None:
            yield from check_subagent_params(ctx, index, item, child)
        if child is not None and child.model is None:
            yield ctx.issue(
                at,
                f"sub-agent {written} has no `model:`; a sub-agent runs on its own model "
                "(`--model` changes only the agent it names)",
            )
        if explicit is None and child is None:  # broken: its name, for the lint only
            name = _raw_name(target)
            if name is not None and TOOL_NAME.match(name):
                ctx.subagent_tools.append(name)
        elif explicit is None and child is not None:
            name = AgentToolSet(target, written).tool_name(child)
            if TOOL_NAME.match(name):
                ctx.subagent_tools.append(name)
            else:
                yield ctx.issue(
                    at,
                    f"the tool name defaults to the sub-agent's name `{name}`, which is not a "
                    "tool name (letters, digits, `_`, `.` and `-`, not starting with a digit); "
                    "set `name:`",
                )


def cycle_issue(ctx: CheckContext, at: JsonPath, loop: tuple[Path, ...]) -> Issue:
    """One error per cycle, whichever of its manifests validation started from.

    The loop is turned to start at its first manifest in path order and reported at
    the edge that closes it (in the manifest before that one), so a cycle found from
    `a.yaml` and the same cycle found from `b.yaml` are the same issue, and
    `assemble validate` (which reports each issue once) shows it once."""
    members = loop[:-1]
    start = members.index(min(members, key=str))
    turned = (*members[start:], *members[:start], members[start])
    message = f"{CYCLE}: {describe_chain(turned)}"
    source, target = turned[-2], turned[-1]
    if source == ctx.path.resolve() and ctx.resolve(_written(ctx.data, at)).resolve() == target:
        return ctx.issue(at, message)
    document = parse_manifest(
        source, unset_variables="warning", display=shown_path(source)
    ).document
    if document is not None and isinstance(document.data, dict):
        for index, item in agent_entries(document.data):
            if _target(source, item["agent"]) == target:
                return document.source.issue(("tools", "sets", index, "agent"), message)
    return ctx.issue(at, message)  # the file changed under us: report where it was found


def _written(data: Mapping[str, Any], at: JsonPath) -> str:
    """The `agent:` value at `at` (`tools.sets[i].agent`) of a raw document."""
    return str(data["tools"]["sets"][at[2]]["agent"])


def _target(manifest: Path, written: str) -> Path:
    return Path(os.path.normpath(manifest.parent / os.path.expanduser(written))).resolve()


def _raw_name(path: Path) -> str | None:
    document = parse_manifest(path, unset_variables="warning").document
    name = document.data.get("name") if document and isinstance(document.data, dict) else None
    return name if isinstance(name, str) else None


def describe_chain(paths: tuple[Path, ...]) -> str:
    return " -> ".join(shown_path(path) for path in paths)


def shown_path(path: Path) -> str:
    """Relative to the current directory when inside it, as issues show files."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (ValueError, OSError):
        return str(path)
