"""The tree of manifests an agent delegates to, loaded once when the agent is built.

`load_team` reads every sub-agent manifest below an agent with the checks of
`assemble validate`, applies `workspace: inherit`, and names each member by its
path of tool names (`lead/reviewer`). Everything later reads from this tree: trust is
decided for all of it before anything is built, `render --agent` shows a member's
prompt from it, and a delegation builds its child from the member's manifest without
reading a manifest file again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from assembler.errors import Issue, ManifestError, UsageError
from assembler.manifest.model import AgentToolSet, Manifest
from assembler.sandbox.spec import for_child
from assembler.tools.base import Tool, ToolFunction
from assembler.validation.agent_tree import Lineage, describe_chain
from assembler.validation.validator import ReportMemo, validate_file


@dataclass(frozen=True)
class Delegate:
    """One `agent:` tool set, resolved: the tool the parent's model sees (`name`,
    `description`) and the member it runs."""

    spec: AgentToolSet
    name: str
    description: str
    member: TeamMember


@dataclass(frozen=True)
class _Tree:
    """What every member of one loaded tree shares: how manifests are read, the
    reports of those already read (each file once per depth), and the change applied
    to each manifest as it runs (an eval's copy of the workspace)."""

    env: Mapping[str, str] | None
    unset_variables: str
    memo: ReportMemo = field(default_factory=dict)
    transform: Callable[[Manifest], Manifest] | None = None


@dataclass(frozen=True)
class TeamMember:
    """One agent of a team: its manifest as it runs (workspace applied), its path from
    the root (`lead/reviewer`), and the sub-agents it delegates to.

    `delegates` are read when first asked for, and each manifest file only once per
    tree (and depth): a legal diamond, where several agents delegate to the same
    manifest, costs one load per file however many paths lead to it. Walk the tree
    with `unique()` (once per manifest), not `descendants()` (once per path), when
    only the agents matter.
    """

    manifest: Manifest
    path: str
    _tree: _Tree | None = field(default=None, repr=False, compare=False)
    _lineage: Lineage = field(default=Lineage(), repr=False, compare=False)
    _loaded: Manifest | None = field(default=None, repr=False, compare=False)
    """The manifest as loaded, before `_tree.transform` (what `inherit` passes on)."""

    @property
    def depth(self) -> int:
        """0 for the agent that was built, 1 for its sub-agents, and so on."""
        return self.path.count("/")

    @cached_property
    def delegates(self) -> tuple[Delegate, ...]:
        """The `agent:` tool sets of this member's manifest, each with its member."""
        if self._tree is None:
            return ()
        return _delegates(self, self._tree)

    def descendants(self) -> Iterator[TeamMember]:
        """Every member below this one, depth first, in manifest order: one per path,
        so a diamond yields a manifest as often as paths lead to it."""
        for delegate in self.delegates:
            yield delegate.member
            yield from delegate.member.descendants()

    def unique(self) -> Iterator[TeamMember]:
        """Every member below this one, depth first in manifest order, each agent
        (manifest file and workspace) once, at the first path that reaches it: linear
        in the number of manifests, however many paths lead to each."""
        entered = {_identity(self.manifest)}

        def walk(member: TeamMember) -> Iterator[TeamMember]:
            for delegate in member.delegates:
                child = delegate.member
                identity = _identity(child.manifest)
                if identity not in entered:
                    entered.add(identity)
                    yield child
                    yield from walk(child)

        return walk(self)

    def find(self, path: str) -> TeamMember:
        """The member at `path`, tool names from here down (`reviewer` or
        `reviewer/helper`); a `UsageError` naming the sub-agents there are."""
        member = self
        for name in (part for part in path.split("/") if part):
            found = next((d.member for d in member.delegates if d.name == name), None)
            if found is None:
                known = ", ".join(f"`{d.name}`" for d in member.delegates) or "none"
                raise UsageError(f"`{member.path}` has no sub-agent `{name}` (sub-agents: {known})")
            member = found
        return member

    def mapped(self, change: Callable[[Manifest], Manifest]) -> TeamMember:
        """This member and every one below it with `change` applied to its manifest
        as it runs (applied when a member is first read, so still once per file)."""
        tree = self._tree or _Tree(None, "error")
        before = tree.transform
        transform = change if before is None else (lambda m: change(before(m)))
        return TeamMember(
            change(self.manifest),
            self.path,
            replace(tree, transform=transform),
            self._lineage,
            self._loaded or self.manifest,
        )


def _identity(manifest: Manifest) -> tuple[Path, Path]:
    """An agent of the tree: its manifest file and its workspace, as loaded (absolute;
    not resolved, which costs system calls per visit: a file reached through two
    spellings is merely visited twice)."""
    return (manifest.path, manifest.workspace)


def load_team(
    manifest: Manifest,
    *,
    env: Mapping[str, str] | None = None,
    unset_variables: str = "error",
) -> TeamMember:
    """`manifest` and every sub-agent below it, each loaded and checked once (a
    sub-agent's manifest is read when the tree is first walked to it)."""
    tree = _Tree(env, unset_variables)
    member = TeamMember(manifest, manifest.name, tree, Lineage(), manifest)
    for _ in member.unique():  # every manifest now: a broken sub-agent fails the load
        pass
    return member


def _delegates(member: TeamMember, tree: _Tree) -> tuple[Delegate, ...]:
    manifest = member._loaded or member.manifest
    specs = [(i, s) for i, s in enumerate(manifest.tools.sets) if isinstance(s, AgentToolSet)]
    if not specs:
        return ()
    lineage = member._lineage
    here = manifest.path.resolve()
    chain = (*lineage.chain, here)
    remaining, limited_by = lineage.remaining, lineage.limited_by
    if remaining is None or manifest.limits.max_agent_depth < remaining:
        remaining, limited_by = manifest.limits.max_agent_depth, here
    delegates: list[Delegate] = []
    for index, spec in specs:
        target = spec.agent.resolve()
        # validation refuses both; a manifest that did not go through it is refused here
        if target in chain or remaining < 1:
            problem = (
                f"sub-agents form a cycle: {describe_chain((*chain, target))}"
                if target in chain
                else f"sub-agent {spec.target} is deeper than `limits.max_agent_depth` allows"
            )
            raise ManifestError([_issue(manifest, index, problem)])
        child_lineage = Lineage(chain, remaining - 1, limited_by)
        key = (target, child_lineage.remaining, child_lineage.limited_by)
        report = tree.memo.get(key)
        if report is None:
            report = tree.memo[key] = validate_file(
                spec.agent,
                env=tree.env,
                unset_variables=tree.unset_variables,
                lineage=child_lineage,
                memo=tree.memo,
            )
        if report.has_errors or report.manifest is None:
            raise ManifestError(report.issues)
        loaded = report.manifest
        if spec.workspace == "inherit":
            loaded = replace(loaded, workspace=manifest.workspace)
        loaded = _with_parent_sandbox(manifest, loaded)
        running = tree.transform(loaded) if tree.transform is not None else loaded
        name = spec.tool_name(running)
        child = TeamMember(running, f"{member.path}/{name}", tree, child_lineage, loaded)
        delegates.append(Delegate(spec, name, spec.tool_description(running), child))
    return tuple(delegates)


def _with_parent_sandbox(parent: Manifest, child: Manifest) -> Manifest:
    """`child` with the sandbox it runs in: the parent's when it declares none, its own
    (hiding what the parent hides) when that only narrows the parent's; refused
    (`ManifestError`) when it would widen it."""
    sandbox, problems = for_child(parent.sandbox, parent.workspace, child.sandbox, child.workspace)
    if problems:
        message = "a sub-agent may only narrow its parent's sandbox: " + "; ".join(problems)
        issue = (
            child.source.issue(("sandbox",), message)
            if child.source is not None
            else Issue(str(child.path), message=message)
        )
        raise ManifestError([issue])
    return replace(child, sandbox=sandbox)


def _issue(manifest: Manifest, index: int, message: str) -> Issue:
    at = ("tools", "sets", index, "agent")
    if manifest.source is not None:
        return manifest.source.issue(at, message)
    return Issue(str(manifest.path), message=message)


TASK_PARAMETERS: Mapping[str, object] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "The task, with everything the agent needs to know: it sees "
            "nothing of this conversation, only this text.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}


def delegate_parameters(delegate: Delegate) -> Mapping[str, object]:
    """The sub-agent tool's input: `{task}`, or the child's `parameters` (less those
    the parent's entry fixes with `params:`) when it declares any, so the parent's
    model calls a typed child like a typed function."""
    child = delegate.member.manifest
    if not child.parameters:
        return TASK_PARAMETERS
    from assembler.typed.parameters import Parameters  # compiles schemas: only when typed

    return Parameters(child.parameters).input_schema(fixed=delegate.spec.params)


def delegate_tool(delegate: Delegate, execute: ToolFunction) -> Tool:
    """The tool `NAME(task)` (or `NAME(<its parameters>)`) of a sub-agent, the same in a dry run and a real build
    (only `execute` differs), so `render` shows exactly what the model gets."""
    first = delegate.description.strip().splitlines()[0] if delegate.description.strip() else ""
    return Tool(
        name=delegate.name,
        description=delegate.description,
        parameters=delegate_parameters(delegate),
        execute=execute,
        snippet=first,
        guidelines=(),
        source=f"agent:{delegate.spec.target}",
    )
