"""`BuildOptions`: everything `build_agent` takes besides the manifest, in one object.

The CLI commands that build an agent (`run`, `rpc`, `acp`), a parent building its
sub-agent and embedding code all describe a build with it, so a new option is added
once, here, instead of to a keyword list copied into every caller (the lists had
already drifted apart). Embedding code may still pass the fields as keywords
(`build_agent(path, trust=True)`): `BuildChanges` types them, and a test keeps it in
step with the dataclass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from assembler.agent.team import TeamMember
    from assembler.budgets import BudgetLimits
    from assembler.permissions.gate import Approver
    from assembler.permissions.policy import PermissionMode
    from assembler.pricing import Price
    from assembler.providers.base import ModelProvider
    from assembler.resources.loader import LoaderFlags
    from assembler.runner.budget import BudgetPot
    from assembler.sessions.store import Session
    from assembler.trust import TrustDecision, TrustPrompt


@dataclass(frozen=True, eq=False)
class BuildOptions:
    """How to build an agent from a manifest; every field has the SDK's default.

    `provider` replaces the manifest's model with a ready provider (tests use
    `assembler.testing.ScriptedModel`); `model` overrides it by name (`provider:name`).
    `session` (an id, id prefix, path or open `Session`) continues an existing session
    exactly as it was sent; with `fork` (an entry id of it), a new session starts from
    that entry. `approver` answers the manifest's `ask` permission rules (none: an ask
    is a deny); `permission_mode` changes what an ask becomes (`accept-edits`,
    `deny-asks`, `bypass`). `trust` True trusts the code of the manifest and its
    sub-agents for this build, None consults the trust store (and `ask_trust`, when
    given); a `TrustDecision` made for a tree this agent belongs to is held to
    (`assembler.agent.trusting`: a sub-agent, an eval task). `team` is the sub-agent
    tree of the manifest when a parent builds its child (the tree is otherwise loaded
    by the build, and trust is decided for all of it at once). `env` stands for
    `os.environ` (API keys, `${VAR}`, the tools' environment). `params` are values of
    the manifest's `parameters`, checked first (a `ParameterError` lists every problem
    before anything is built); None binds them at the first run instead. `budget` overrides the
    manifest's `limits.budget` limit by limit (`--budget-usd`); `budget_pot` is a pot
    every run of the agent also draws from (a parent's run, an evaluation's task).
    `price` overrides the model's price (a ready `provider` has none of its own).
    """

    model: str | None = None
    provider: ModelProvider | None = None
    flags: LoaderFlags | None = None
    session_dir: Path | None = None
    record_session: bool = True
    trust: bool | TrustDecision | None = None
    ask_trust: TrustPrompt | None = None
    env: Mapping[str, str] | None = None
    session: str | Path | Session | None = None
    fork: str | None = None
    permission_mode: PermissionMode = "default"
    approver: Approver | None = None
    team: TeamMember | None = None
    params: Mapping[str, Any] | None = None
    budget: BudgetLimits | None = None
    budget_pot: BudgetPot | None = None
    price: Price | None = None


class BuildChanges(TypedDict, total=False):
    """The fields of `BuildOptions` as keyword arguments of `build_agent`."""

    model: str | None
    provider: ModelProvider | None
    flags: LoaderFlags | None
    session_dir: Path | None
    record_session: bool
    trust: bool | TrustDecision | None
    ask_trust: TrustPrompt | None
    env: Mapping[str, str] | None
    session: str | Path | Session | None
    fork: str | None
    permission_mode: PermissionMode
    approver: Approver | None
    team: TeamMember | None
    params: Mapping[str, Any] | None
    budget: BudgetLimits | None
    budget_pot: BudgetPot | None
    price: Price | None
