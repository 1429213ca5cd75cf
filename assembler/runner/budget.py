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


@dataclass(frozen=True)
class BudgetStop:
    """Why a run stopped: which budget of which scope, its limit, what was used."""

    budget: str
    limit: float
    used: float
    scope: str = "run"

    def message(self) -> str:
        return (
            f"the {self.scope} budget `{self.budget}` is spent: used {shown_amount(self.budget, self.used)} "
            f"of {shown_amount(self.budget, self.limit)}"
        )

    def to_dict(self) -> dict[str, Any]:
        used = round_cost(self.used) if self.budget == "cost_usd" else self.used
        if self.budget == "wall_time":
            used = round(self.used, 3)
        return {"budget": self.budget, "limit": self.limit, "used": used, "scope": self.scope}


def shown_amount(budget: str, value: float, usd: Callable[[float], str] = format_cost) -> str:
    """An amount of `budget` as people read it (`usd` writes dollars)."""
    if budget == "cost_usd":
        return usd(value)
    if budget == "wall_time":
        return f"{value:,.1f} s"
    return f"{int(value):,}"


Held = tuple["BudgetPot", int, float, "BudgetStop | None", float | None]
"""Room held for one request by `BudgetPot.hold`: the pot it was asked of (the room
is held in every pot of its chain), tokens, dollars, the budget that lowered the
reply's limit if one did (what it would read if spent), and the seconds left until
the nearest deadline when it was held (None: no wall-time limit). A plain tuple: the
runner holds room before every request."""


@dataclass
class Reservation:
    """Room held in every pot of a chain while one request runs, settled or released
    once (`BudgetPot.reserve`; the runner's meter keeps the bare `Held` instead)."""

    held: Held
    price: Price | None
    settled: bool = False

    @property
    def tokens(self) -> int:
        return self.held[1]

    @property
    def capped(self) -> BudgetStop | None:
        return self.held[3]

    def settle(self, usage: Usage) -> float:
        """Release the room and charge what `usage` really cost; returns the cost."""
        cost = self.price.cost(usage) if self.price is not None else 0.0
        if not self.settled:
            self.settled = True
            self.held[0].let_go(self.held, usage, cost)
        return cost

    def release(self) -> None:
        """Give the room back unspent (the request failed before any usage)."""
        if not self.settled:
            self.settled = True
            self.held[0].let_go(self.held)


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
    _chain: tuple[BudgetPot, ...] = field(init=False, repr=False, compare=False)
    _timed: tuple[BudgetPot, ...] = field(init=False, repr=False, compare=False)
    _counting: tuple[BudgetPot, ...] = field(init=False, repr=False, compare=False)
    _alone: bool = field(init=False, repr=False, compare=False)
    _wall: float | None = field(init=False, repr=False, compare=False)
    _token_cap: int | None = field(init=False, repr=False, compare=False)
    _cost_cap: float | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.started = self.clock()
        # A pot's limits and parent never change once it exists, so the chain and the
        # pots of it that some budget concerns are worked out once, not per request.
        self._chain = (self, *self.parent._chain) if self.parent is not None else (self,)
        self._timed = tuple(p for p in self._chain if p.limits.wall_time is not None)
        self._counting = tuple(
            p for p in self._chain if p.limits.tokens is not None or p.limits.cost_usd is not None
        )
        # and, for a pot that draws from no other (a run's own), its limits as plain
        # attributes: `hold` checks them without a loop
        self._alone = self.parent is None
        self._wall = self.limits.wall_time
        self._token_cap = self.limits.tokens
        self._cost_cap = self.limits.cost_usd

    def chain(self) -> Iterator[BudgetPot]:
        """This pot, then each one it draws from."""
        return iter(self._chain)

    @property
    def counts_spending(self) -> bool:
        """Some pot of the chain limits tokens or dollars."""
        return bool(self._counting)

    def child(self, limits: BudgetLimits, scope: str) -> BudgetPot:
        """A pot for something this one pays for (a sub-agent's run, a task)."""
        return BudgetPot(limits, scope, parent=self, clock=self.clock)

    # -- wall time ---------------------------------------------------------------

    def elapsed(self) -> float:
        return self.clock() - self.started

    def seconds_left(self) -> float | None:
        """Until the nearest deadline of the chain (None: no wall-time limit)."""
        timed = self._timed
        if not timed:
            return None
        if len(timed) == 1:
            pot = timed[0]
            return pot.limits.wall_time - (pot.clock() - pot.started)  # type: ignore[operator]
        return min(
            pot.limits.wall_time - pot.elapsed()  # type: ignore[operator]
            for pot in timed
        )

    def out_of_time(self) -> BudgetStop | None:
        for pot in self._timed:
            limit: float = pot.limits.wall_time  # type: ignore[assignment]
            if pot.clock() - pot.started >= limit:
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
        held = self.hold(estimate, price, wanted, minimum, cached)
        return held if isinstance(held, BudgetStop) else Reservation(held, price)

    def hold(
        self, estimate: int, price: Price | None, wanted: int, minimum: int, cached: int = 0
    ) -> Held | BudgetStop:
        """`reserve`'s room as a bare `Held` (its tokens less `estimate` are the reply's
        limit), to give back with `let_go`. The check before every request: it reads
        the clock once and makes no object but the tuple; a pot that draws from no
        other, with room for the whole reply, takes a path without loops or calls
        (bench/bench_budget.py)."""
        if not self._alone:
            left = self._deadline()
            if isinstance(left, BudgetStop):
                return left
            return self._hold(estimate, price, wanted, minimum, cached, left=left)
        wall = self._wall
        left = None
        if wall is not None:
            left = wall - (self.clock() - self.started)  # as `_deadline` computes it
            if left <= 0.0:  # (a float, as `left` is: the comparison Python specialises)
                return BudgetStop("wall_time", wall, self.elapsed(), self.scope)
        # The same checks as `_hold`'s, when none of them lowers the reply: the whole
        # of `wanted` fits what is left of every limit (and is at least `minimum`).
        tokens = estimate + wanted
        cap = self._token_cap
        if wanted >= minimum and (
            cap is None or cap - self.tokens - self.reserved_tokens - estimate >= wanted
        ):
            if price is None:
                self.reserved_tokens += tokens
                return self, tokens, 0.0, None, left
            if cached > estimate:
                cached = estimate
            elif cached < 0:
                cached = 0
            cost = (
                cached * price.read_token
                + (estimate - cached) * price.held_token
                + wanted * price.output_token
            )
            usd = self._cost_cap
            if usd is None or usd - self.cost - self.reserved_cost >= cost:
                self.reserved_tokens += tokens
                self.reserved_cost += cost
                return self, tokens, cost, None, left
        return self._hold(estimate, price, wanted, minimum, cached, left=left)

    def _deadline(self) -> float | BudgetStop | None:
        """The seconds left until the nearest deadline of the chain (one clock reading
        per pot with one; None: no wall-time limit), or the stop of one that passed."""
        left: float | None = None
        for pot in self._timed:
            limit: float = pot.limits.wall_time  # type: ignore[assignment]
            pot_left = limit - (pot.clock() - pot.started)
            if pot_left <= 0:  # exactly when the elapsed time has reached the limit
                return BudgetStop("wall_time", limit, pot.elapsed(), pot.scope)
            if left is None or pot_left < left:
                left = pot_left
        return left

    def _hold(
        self,
        estimate: int,
        price: Price | None,
        wanted: int,
        minimum: int,
        cached: int,
        *,
        left: float | None,
    ) -> Held | BudgetStop:
        """`hold` once the deadlines are checked (`left` until the nearest): every
        counting pot of the chain, the reply lowered to what the tightest leaves."""
        output = wanted
        capped: BudgetStop | None = None
        input_cost = 0.0
        if price is not None:
            # `cached` tokens likely read from the prompt cache, the rest charged as
            # cache writes where those cost more than plain input (`Price.held`)
            if cached > estimate:
                cached = estimate
            elif cached < 0:
                cached = 0
            input_cost = cached * price.read_token + (estimate - cached) * price.held_token
        for pot in self._counting:
            limits = pot.limits
            if limits.tokens is not None:
                room = limits.tokens - pot.tokens - pot.reserved_tokens - estimate
                if room < minimum:
                    return pot.exhaust(BudgetStop("tokens", limits.tokens, pot.tokens, pot.scope))
                if room < output:
                    output, capped = room, BudgetStop("tokens", limits.tokens, 0, pot.scope)
            if limits.cost_usd is not None and price is not None:
                # the reply tokens the dollars left pay for; floor(x) < n exactly when
                # x < n (n an integer), so the floor is taken only when it matters
                dollars = limits.cost_usd - pot.cost - pot.reserved_cost - input_cost
                if price.output_token:
                    replies = dollars / price.output_token
                else:  # free replies: only the input has to fit
                    replies = math.inf if dollars >= 0 else -1.0
                if replies < minimum or replies < output:
                    room = math.floor(replies)
                    if room < minimum:
                        stop = BudgetStop("cost_usd", limits.cost_usd, pot.cost, pot.scope)
                        return pot.exhaust(stop)
                    if room < output:
                        output = room
                        capped = BudgetStop("cost_usd", limits.cost_usd, 0, pot.scope)
        cost = input_cost + output * price.output_token if price is not None else 0.0
        tokens = estimate + output
        for pot in self._chain:
            pot.reserved_tokens += tokens
            pot.reserved_cost += cost
        return self, tokens, cost, capped, left

    def let_go(self, held: Held, usage: Usage | None = None, cost: float = 0.0) -> None:
        """Give `held` (held by this pot) back to every pot of the chain, and charge
        them `usage` and `cost` when the request used some."""
        tokens, reserved = held[1], held[2]
        spent = usage.input_tokens + usage.output_tokens if usage is not None else 0
        for pot in self._chain:
            pot.reserved_tokens -= tokens
            pot.reserved_cost -= reserved
            pot.tokens += spent
            pot.cost += cost

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
        pots = self._chain
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
