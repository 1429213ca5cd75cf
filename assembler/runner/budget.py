"""Budgets at run time: one pot per run, shared with everything the run delegates.

A `BudgetPot` holds the limits of one scope (a run, an evaluation task, a whole
evaluation), what was spent in it, and the pot it draws from too (a sub-agent's run
draws from its parent's run; a task from its evaluation). Spending goes into every pot
up the chain, and a check asks every pot.

Checks happen before the spending, not after:

- before each model request, `reserve` takes the request's estimated input and a
  minimum reply from what is left; the request's `max_tokens` is lowered to the rest,
  so the reply cannot spend past the limit. What cannot fit is a `BudgetStop`. The
  reservation holds the room while the request runs (two sub-agents working side by
  side cannot both spend the same dollars) and `settle`s with what the provider
  reported. A limit is crossed by at most the error of one request's input estimate.
- before each tool call, `start_tool_call` counts it, or refuses it at the limit.
- wall time is a deadline: checked at each boundary, and the runner cuts a request
  still streaming at the deadline and lowers each tool's timeout to what is left.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from assembler.budgets import BudgetLimits
from assembler.messages import Usage
from assembler.pricing import Price, format_cost, round_cost

__all__ = ["BudgetPot", "BudgetStop", "Reservation"]

_PER_TOKEN = 1e-6


@dataclass(frozen=True)
class BudgetStop:
    """Why a run stopped: which budget of which scope, its limit, what was used."""

    budget: str
    limit: float
    used: float
    scope: str = "run"

    def message(self) -> str:
        return (
            f"the {self.scope} budget `{self.budget}` is spent: used {_shown(self.budget, self.used)} "
            f"of {_shown(self.budget, self.limit)}"
        )

    def to_dict(self) -> dict[str, Any]:
        used = round_cost(self.used) if self.budget == "cost_usd" else self.used
        if self.budget == "wall_time":
            used = round(self.used, 3)
        return {"budget": self.budget, "limit": self.limit, "used": used, "scope": self.scope}


def _shown(budget: str, value: float) -> str:
    if budget == "cost_usd":
        return format_cost(value)
    if budget == "wall_time":
        return f"{value:,.1f} s"
    return f"{int(value):,}"


@dataclass
class Reservation:
    """Room held in every pot of a chain while one request runs."""

    pots: tuple[BudgetPot, ...]
    tokens: int
    cost: float
    price: Price | None
    settled: bool = False
    capped: BudgetStop | None = None
    """The budget that lowered the reply's limit (what it would read if spent)."""

    def settle(self, usage: Usage) -> float:
        """Release the room and charge what `usage` really cost; returns the cost."""
        cost = self.price.cost(usage) if self.price is not None else 0.0
        if not self.settled:
            self.settled = True
            for pot in self.pots:
                pot.reserved_tokens -= self.tokens
                pot.reserved_cost -= self.cost
                pot.tokens += usage.input_tokens + usage.output_tokens
                pot.cost += cost
        return cost

    def release(self) -> None:
        """Give the room back unspent (the request failed before any usage)."""
        if not self.settled:
            self.settled = True
            for pot in self.pots:
                pot.reserved_tokens -= self.tokens
                pot.reserved_cost -= self.cost


@dataclass
class BudgetPot:
    """The limits of one scope and what was spent in it; `parent` is the pot this one
    draws from as well (None at the top)."""

    limits: BudgetLimits = field(default_factory=BudgetLimits)
    scope: str = "run"
    parent: BudgetPot | None = None
    clock: Callable[[], float] = time.monotonic
    tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    reserved_tokens: int = 0
    reserved_cost: float = 0.0
    exhausted: BudgetStop | None = None
    """Set when a request did not fit this pot's limit: it is spent for what needs it
    (an evaluation stops starting runs), even if a little is left."""
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def chain(self) -> Iterator[BudgetPot]:
        """This pot, then each one it draws from."""
        pot: BudgetPot | None = self
        while pot is not None:
            yield pot
            pot = pot.parent

    def child(self, limits: BudgetLimits, scope: str) -> BudgetPot:
        """A pot for something this one pays for (a sub-agent's run, a task)."""
        return BudgetPot(limits, scope, parent=self, clock=self.clock)

    # -- wall time ---------------------------------------------------------------

    def elapsed(self) -> float:
        return self.clock() - self.started

    def seconds_left(self) -> float | None:
        """Until the nearest deadline of the chain (None: no wall-time limit)."""
        left = [
            pot.limits.wall_time - pot.elapsed()
            for pot in self.chain()
            if pot.limits.wall_time is not None
        ]
        return min(left) if left else None

    def out_of_time(self) -> BudgetStop | None:
        for pot in self.chain():
            limit = pot.limits.wall_time
            if limit is not None and pot.elapsed() >= limit:
                return BudgetStop("wall_time", limit, pot.elapsed(), pot.scope)
        return None

    # -- what is spent -------------------------------------------------------------

    def spent(self) -> BudgetStop | None:
        """The first limit of the chain already reached (tool calls excepted: those
        stop a run only when one more is asked for)."""
        stop = self.out_of_time()
        if stop is not None:
            return stop
        for pot in self.chain():
            if pot.exhausted is not None:
                return pot.exhausted
            limits = pot.limits
            if limits.tokens is not None and pot.tokens >= limits.tokens:
                return BudgetStop("tokens", limits.tokens, pot.tokens, pot.scope)
            if limits.cost_usd is not None and pot.cost >= limits.cost_usd:
                return BudgetStop("cost_usd", limits.cost_usd, pot.cost, pot.scope)
        return None

    def reserve(
        self,
        estimate: int,
        price: Price | None,
        *,
        wanted: int,
        minimum: int,
        cached: int = 0,
    ) -> Reservation | BudgetStop:
        """Room for one request of about `estimate` input tokens (`cached` of them
        likely read from the prompt cache) and a reply of up to `wanted` tokens: a
        `Reservation` whose `tokens - estimate` is the reply's limit, or a `BudgetStop`
        when fewer than `minimum` reply tokens would fit."""
        stop = self.out_of_time()
        if stop is not None:
            return stop
        output = wanted
        capped: BudgetStop | None = None
        input_cost = _input_cost(estimate, cached, price)
        for pot in self.chain():
            limits = pot.limits
            if limits.tokens is not None:
                left = limits.tokens - pot.tokens - pot.reserved_tokens - estimate
                if left < minimum:
                    return pot.exhaust(BudgetStop("tokens", limits.tokens, pot.tokens, pot.scope))
                if left < output:
                    output, capped = left, BudgetStop("tokens", limits.tokens, 0, pot.scope)
            if limits.cost_usd is not None and price is not None:
                money = limits.cost_usd - pot.cost - pot.reserved_cost - input_cost
                left = math.floor(money / (price.output * _PER_TOKEN)) if price.output else output
                if left < minimum:
                    stop = BudgetStop("cost_usd", limits.cost_usd, pot.cost, pot.scope)
                    return pot.exhaust(stop)
                if left < output:
                    output, capped = left, BudgetStop("cost_usd", limits.cost_usd, 0, pot.scope)
        cost = input_cost + output * (price.output if price is not None else 0.0) * _PER_TOKEN
        pots = tuple(self.chain())
        for pot in pots:
            pot.reserved_tokens += estimate + output
            pot.reserved_cost += cost
        return Reservation(pots, estimate + output, cost, price, capped=capped)

    def exhaust(self, stop: BudgetStop) -> BudgetStop:
        """Mark this pot spent: a request did not fit what is left of `stop`'s budget."""
        if self.exhausted is None:
            self.exhausted = stop
        return stop

    def start_tool_call(self) -> BudgetStop | None:
        """Count one tool call about to run, or refuse it: a `tool_calls` limit of the
        chain reached, or the wall time over."""
        stop = self.out_of_time()
        if stop is not None:
            return stop
        pots = tuple(self.chain())
        for pot in pots:
            limit = pot.limits.tool_calls
            if limit is not None and pot.tool_calls >= limit:
                return BudgetStop("tool_calls", limit, pot.tool_calls, pot.scope)
        for pot in pots:
            pot.tool_calls += 1
        return None

    def charge(self, usage: Usage, cost: float) -> None:
        """Spending that had no reservation (a compaction's summary, a memory call)."""
        for pot in self.chain():
            pot.tokens += usage.input_tokens + usage.output_tokens
            pot.cost += cost

    def used(self, stop: BudgetStop) -> BudgetStop:
        """`stop` with what the pot of its scope has used of its budget by now."""
        for pot in self.chain():
            if pot.scope == stop.scope:
                used = pot.cost if stop.budget == "cost_usd" else pot.tokens
                return BudgetStop(stop.budget, stop.limit, used, stop.scope)
        return stop

    def summary(self) -> dict[str, Any]:
        """Limits and what was used, by budget, for events and results."""
        used: dict[str, Any] = {
            "cost_usd": round_cost(self.cost),
            "tokens": self.tokens,
            "wall_time": round(self.elapsed(), 3),
            "tool_calls": self.tool_calls,
        }
        return {"scope": self.scope, "limits": self.limits.to_dict(), "used": used}


def _input_cost(estimate: int, cached: int, price: Price | None) -> float:
    """The likely cost of `estimate` input tokens, `cached` of them cache reads and
    the rest charged as cache writes where those cost more than plain input."""
    if price is None:
        return 0.0
    cached = max(0, min(cached, estimate))
    fresh = estimate - cached
    return _PER_TOKEN * (cached * price.read + fresh * max(price.input, price.write))
