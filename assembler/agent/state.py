"""`AgentState`: what a front end shows of an agent, read in one call.

The terminal's `/session` and banner, RPC's `state` and `messages`, ACP's session
replay and a parent naming the entry of a delegation all read the same snapshot,
through `Agent.state()`, instead of each reaching into the runner's attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.messages import Message, Usage

if TYPE_CHECKING:
    from assembler.sessions.store import Session
    from assembler.tools.builtin.todo import TodoItem


@dataclass(frozen=True)
class AgentState:
    """An agent at one moment; a copy, so a front end may keep it while the run goes on."""

    name: str
    model: str
    """The provider's `provider:name`, as banners show it."""
    endpoint: str
    """Where requests go (a manifest's `base_url` as written); empty for the provider's own."""
    workspace: Path
    session: Session | None
    streaming: bool
    steers: tuple[str, ...]
    """Steers not delivered yet, in order."""
    follow_ups: tuple[str, ...]
    usage: Usage
    """Tokens used since the agent was built, every request included."""
    context_tokens: int
    """Input tokens of the latest response: how full the context window is (0 after a
    compaction, or before the first response)."""
    context_window: int | None
    permission_mode: str | None
    """None when the agent has no permission rules."""
    permission_default: str | None
    messages: tuple[Message, ...]
    """The conversation the next request continues."""
    entry_ids: tuple[str | None, ...] | None
    """The session entry of each message (None for one the file does not hold, such as
    an "interrupted" result); None as a whole when the agent records no session."""
    cost_usd: float | None = None
    """What every request since the agent was built cost (None: no known price)."""
    budget: Mapping[str, Any] | None = None
    """The budget of each run (None without one): its `limits`, and what the latest
    run `used` of it (None before the first run), as `RunEnd.budget` gives them."""
    plan: tuple[TodoItem, ...] = ()
    """The model's plan (`todo_write`), as last written; restored with the session."""

    @property
    def parent_session(self) -> str | None:
        """The session this one was forked from, if it is a fork."""
        value = self.session.header.get("parent_session") if self.session is not None else None
        return value if isinstance(value, str) and value else None

    @property
    def forked_from(self) -> str | None:
        value = self.session.header.get("forked_from") if self.session is not None else None
        return value if isinstance(value, str) and value else None

    def session_lines(self) -> list[str]:
        """Where the session is recorded, as `/session` shows it (terminal and editor)."""
        if self.session is None:
            return ["session: not recorded (--no-session)"]
        return [f"session {self.session.id}", f"file: {self.session.path}"]

    def context_line(self) -> str:
        """How full the context window is, as `/session` shows it."""
        tokens, window = self.context_tokens, self.context_window
        if not tokens:
            return "context: no response since the start or the last compaction"
        if window:
            return f"context: {tokens:,} of {window:,} tokens ({tokens * 100 // window}%)"
        return f"context: {tokens:,} tokens (window unknown)"

    def cost_lines(self) -> list[str]:
        """`/cost` (terminal and editor): tokens and cost since the session started,
        and each turn's budget."""
        usage = self.usage
        lines = [
            f"tokens: {usage.input_tokens:,} in, {usage.output_tokens:,} out; cache: "
            f"{usage.cache_read_tokens:,} read, {usage.cache_write_tokens:,} written"
        ]
        if self.cost_usd is not None:
            lines.append(f"cost: {_usd(self.cost_usd)} ({self.model})")
        else:
            lines.append(f"cost: unknown (no price for {self.model}: set `model.price`)")
        if self.budget is not None:
            lines.extend(_budget_lines(self.budget))
        return lines


def _budget_lines(budget: Mapping[str, Any]) -> list[str]:
    limits: Mapping[str, Any] = budget.get("limits") or {}
    used: Mapping[str, Any] | None = budget.get("used")
    lines = ["budget of each turn:" if used is None else "budget of each turn (the last one):"]
    for name, limit in limits.items():
        spent = used.get(name) if used is not None else None
        if spent is None:
            lines.append(f"  {name}: {_amount(name, limit)}")
            continue
        left = max(0, limit - spent)
        lines.append(
            f"  {name}: {_amount(name, spent)} of {_amount(name, limit)} used, "
            f"{_amount(name, left)} left"
        )
    return lines


def _usd(value: float) -> str:
    """Dollars to the cent's hundredth; a smaller amount to the millionth."""
    return f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


def _amount(budget: str, value: float) -> str:
    # Imported here: front ends that never show a cost do not load the budget module.
    from assembler.runner.budget import shown_amount

    return shown_amount(budget, value, usd=_usd)
