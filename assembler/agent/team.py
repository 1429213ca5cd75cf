"""The tree of manifests an agent delegates to, loaded once when the agent is built.

`load_team` reads every sub-agent manifest below an agent with the checks of
`assemble validate`, applies `workspace: inherit`, and names each member by its
path of tool names (`lead/reviewer`). Everything later reads from this tree: trust is
decided for all of it before anything is built, `render --agent` shows a member's
prompt from it, and a delegation builds its child from the member's manifest without
reading a manifest file again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from assembler.errors import Issue, ManifestError, UsageError
from assembler.manifest.model import AgentToolSet, Manifest
from assembler.sandbox.spec import for_child
from assembler.tools.base import Tool, ToolFunction
from assembler.validation.agent_tree import Lineage, describe_chain
from assembler.validation.validator import validate_file


@dataclass(frozen=True)
class Delegate:
    """One `agent:` tool set, resolved: the tool the parent's model sees (`name`,
    `description`) and the member it runs."""

    spec: AgentToolSet
    name: str
    description: str
    member: TeamMember


@dataclass(frozen=True)
class TeamMember:
    """One agent of a team: its manifest as it runs (workspace applied), its path from
    the root (`lead/reviewer`), and the sub-agents it delegates to."""

    manifest: Manifest
    path: str
    delegates: tuple[Delegate, ...] = ()

    @property
    def depth(self) -> int:
        """0 for the agent that was built, 1 for its sub-agents, and so on."""
        return self.path.count("/")

    def descendants(self) -> Iterator[TeamMember]:
        """Every member below this one, depth first, in manifest order."""
        for delegate in self.delegates:
            yield delegate.member
            yield from delegate.member.descendants()

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


def load_team(
    manifest: Manifest,
    *,
    env: Mapping[str, str] | None = None,
    unset_variables: str = "error",
) -> TeamMember:
    """`manifest` and every sub-agent below it, each loaded and checked once."""
    return _member(manifest, manifest.name, Lineage(), env, unset_variables)


def _member(
    manifest: Manifest,
    path: str,
    lineage: Lineage,
    env: Mapping[str, str] | None,
    unset_variables: str,
) -> TeamMember:
    specs = [(i, s) for i, s in enumerate(manifest.tools.sets) if isinstance(s, AgentToolSet)]
    if not specs:
        return TeamMember(manifest, path)
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
        report = validate_file(
            spec.agent, env=env, unset_variables=unset_variables, lineage=child_lineage
        )
        if report.has_errors or report.manifest is None:
            raise ManifestError(report.issues)
        child = report.manifest
        if spec.workspace == "inherit":
            child = replace(child, workspace=manifest.workspace)
        child = _with_parent_sandbox(manifest, child)
        name = spec.tool_name(child)
        member = _member(child, f"{path}/{name}", child_lineage, env, unset_variables)
        delegates.append(Delegate(spec, name, spec.tool_description(child), member))
    return TeamMember(manifest, path, tuple(delegates))


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


def delegate_tool(delegate: Delegate, execute: ToolFunction) -> Tool:
    """The tool `NAME(task)` of a sub-agent, the same in a dry run and a real build
    (only `execute` differs), so `render` shows exactly what the model gets."""
    first = delegate.description.strip().splitlines()[0] if delegate.description.strip() else ""
    return Tool(
        name=delegate.name,
        description=delegate.description,
        parameters=TASK_PARAMETERS,
        execute=execute,
        snippet=first,
        guidelines=(),
        source=f"agent:{delegate.spec.target}",
    )
