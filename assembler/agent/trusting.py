"""The one trust decision for an agent tree, and the checks of builds that rely on it.

Every front end (`run`, `render`, `rpc`, `acp`, `eval`, the SDK) reaches trust
through `decide_trust`, over the whole tree of sub-agents, before any project code of
the tree runs (DESIGN.md section 15). What it returns is a `TrustDecision`; a build
given one (a sub-agent built for a call, an eval task in its copy of the workspace)
re-checks only that its code is code the decision saw, and a `reload` that finds a
changed file asks again or refuses. No other path skips the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assembler.agent.team import TeamMember
from assembler.errors import TrustError
from assembler.trust import (
    ProjectCode,
    TrustDecision,
    TrustPrompt,
    TrustStore,
    project_code,
    require_trust,
    sub_agent_code,
)


def tree_code(
    member: TeamMember,
    *,
    include_extensions: bool = True,
    model: str | None = None,
    replays: bool = True,
) -> list[ProjectCode]:
    """The project code of `member` and of every sub-agent below it (each manifest
    once). `model` and `replays` concern `member` alone: a sub-agent always runs on
    its own manifest's model."""
    code = project_code(
        member.manifest, include_extensions=include_extensions, model=model, replays=replays
    )
    for child in member.unique():
        found = project_code(child.manifest, include_extensions=include_extensions)
        code.extend(sub_agent_code(child.path, found))
    return code


def decide_trust(
    member: TeamMember,
    trust: bool | TrustDecision | None,
    ask: TrustPrompt | None = None,
    *,
    include_extensions: bool = True,
    model: str | None = None,
    replays: bool = True,
    extra: Sequence[ProjectCode] = (),
    store: TrustStore | None = None,
) -> TrustDecision:
    """Decide trust for `member`'s whole tree, or hold a build to an earlier decision.

    `trust`: True is the caller's explicit decision (`--trust`, an SDK user who knows
    the code); None leaves it to the user's trust store, then `ask`, then no; a
    `TrustDecision` made earlier for a tree this one belongs to is checked instead of
    asking (a `TrustError` names what it does not cover). `extra` is more code the
    project chose (an eval file's check commands and task replays).
    """
    code = [
        *tree_code(member, include_extensions=include_extensions, model=model, replays=replays),
        *extra,
    ]
    manifests = [member.manifest.path, *(m.manifest.path for m in member.unique())]
    if isinstance(trust, TrustDecision):
        unseen = trust.unseen(manifests, code, include_extensions)
        if unseen:
            raise TrustError(_not_covered(unseen))
        return trust
    require_trust(code, trust, ask, store=store)
    return TrustDecision.of(manifests, code, include_extensions)


def recheck(
    decision: TrustDecision,
    member: TeamMember,
    ask: TrustPrompt | None,
    *,
    include_extensions: bool = True,
    model: str | None = None,
    replays: bool = True,
    trust: bool | None = None,
) -> TrustDecision:
    """For `Agent.reload()`: the decision again when nothing changed; when a file of
    code changed since it was made (written during the run, by the agent or anyone),
    the changed code needs trust again: `trust=True` (the caller read it), or a yes
    to `ask`, which lists what changed. The store's trust in the directory does not
    count: it was given to the code as it was."""
    code = tree_code(member, include_extensions=include_extensions, model=model, replays=replays)
    manifests = [member.manifest.path, *(m.manifest.path for m in member.unique())]
    unseen = decision.unseen(manifests, code, include_extensions)
    if not unseen:
        return decision
    if trust is not True:
        root = member.manifest.directory.resolve()
        if trust is False or ask is None or not ask(root, unseen):
            raise TrustError(
                _not_covered(unseen) + "\nNothing was reloaded. Read the change; reload with trust "
                '(`reload(trust=True)`, RPC `reload` with `"trust": true`) or start again.'
            )
    return TrustDecision.of(manifests, code, include_extensions)


@dataclass
class TreeTrust:
    """The trust decision an agent was built with, and what deciding it again needs
    (for `Agent.reload()`); its sub-agents are built on `decision`."""

    decision: TrustDecision
    ask: TrustPrompt | None = None
    include_extensions: bool = True
    model: str | None = None
    replays: bool = True

    @classmethod
    def decide(
        cls,
        member: TeamMember,
        trust: bool | TrustDecision | None,
        ask: TrustPrompt | None = None,
        *,
        include_extensions: bool = True,
        model: str | None = None,
        replays: bool = True,
    ) -> TreeTrust:
        """`decide_trust`, keeping what deciding again on a reload needs."""
        decision = decide_trust(
            member,
            trust,
            ask,
            include_extensions=include_extensions,
            model=model,
            replays=replays,
        )
        return cls(decision, ask, include_extensions, model, replays)

    def recheck(self, member: TeamMember, trust: bool | None = None) -> None:
        """See `recheck`: raises `TrustError`, or keeps the (possibly new) decision."""
        self.decision = recheck(
            self.decision,
            member,
            self.ask,
            include_extensions=self.include_extensions,
            model=self.model,
            replays=self.replays,
            trust=trust,
        )


def _not_covered(unseen: Sequence[str]) -> str:
    lines = "\n".join(f"  - {item}" for item in unseen)
    return f"this code was not covered by the trust decided for the agent:\n{lines}"
