"""The runner's meter: what each request may spend, and what it cost.

`Meter` sits between the loop and the budget pots (`runner/budget.py`). Before a
request it estimates the input (`runner/estimate.py`), reserves room in the run's pot
and lowers the request's `max_tokens` to what the budgets (and the context window)
leave; after it, it prices the reported usage and settles the reservation. It also
gives tools a timeout that ends at the wall-time deadline. Without limits and without
a price it only adds up usage, at the cost of one character count per request.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from assembler.budgets import BudgetLimits
from assembler.messages import (
    AssistantMessage,
    History,
    ModelRequest,
    ModelSettings,
    ToolResultMessage,
    ToolSchema,
    Usage,
)
from assembler.pricing import Price
from assembler.runner.budget import BudgetPot, BudgetStop, Held
from assembler.runner.cuts import CUT_REASONS
from assembler.runner.estimate import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    Calibration,
    arguments_chars,
    message_chars,
)
from assembler.runner.prefix import PrefixWatch

__all__ = ["MIN_REPLY", "BudgetExhausted", "Meter"]

MIN_REPLY = 256
"""The smallest reply worth asking for: a request that leaves less is not sent."""
THINKING_MINIMUM = 1024
"""Anthropic's smallest `budget_tokens`: a thinking request needs this much more."""
UNKNOWN_REPLY = 8192
"""The reply a budget holds room for when neither the manifest nor the model table
gives a limit: the whole budget held for one reply would starve every other request
drawing from the same pot (sub-agents, an evaluation's runs side by side)."""
_UNLIMITED = 1 << 40
_ceil = math.ceil
_ROUND_UP = CHARS_PER_TOKEN - 1
"""(n + _ROUND_UP) // CHARS_PER_TOKEN is n / CHARS_PER_TOKEN rounded up, as `_tokens`
works it out, in two operations instead of three."""


class BudgetExhausted(Exception):
    """A budget stops the run (raised inside the loop, never out of it)."""

    def __init__(self, stop: BudgetStop) -> None:
        super().__init__(stop.message())
        self.stop = stop


class Meter:
    """Prices and bounds one runner's requests; `pot` is the current run's."""

    def __init__(
        self,
        *,
        limits: BudgetLimits | None = None,
        price: Price | None = None,
        parent: BudgetPot | None = None,
        context_window: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits or BudgetLimits()
        self.price = price
        self.parent = parent
        self.context_window = context_window
        self.clock = clock
        self.pot: BudgetPot | None = None
        self.calibration = Calibration()
        self.cost = 0.0
        """What every response so far cost (0 without a price)."""
        self.last_input = 0
        """Input tokens the latest response reported: a likely cached prefix."""
        self.last_max_tokens: int | None = None
        """The reply limit sent with the latest request."""
        self.last_capped: BudgetStop | None = None
        """The budget that lowered the latest request's reply limit, if one did."""
        self.last_estimate: int | None = None
        """The (calibrated) input estimate of the latest request."""
        self.prefix = PrefixWatch()
        self.notes: list[str] = []
        """Warnings for the user (a prefix the cache cannot serve), taken by the loop."""
        self.last_seconds_left: float | None = None
        """The seconds left until the nearest deadline when the latest request was
        checked (None: no wall-time limit): the request's stream may take that long."""
        self._held: Held | None = None
        """Room held for the latest request, until it is settled or released."""
        self._older: list[Held] = []
        """Room held for earlier requests still open (none, in a runner's loop)."""
        # The prompt and tool tuple of the latest request, and their characters: the
        # next request of a run's loop carries the very same objects.
        self._system: str | None = None
        self._stable: int | None = None
        self._tools: tuple[ToolSchema, ...] | None = None
        self._fixed = 0
        self._settings: ModelSettings | None = None
        """The settings `_reply` was worked out for (None: none; it depends on the pot
        too, so a new run's pot forgets it)."""
        self._reply = (False, 0, 0)

    def start_run(self) -> BudgetPot:
        """A new pot for a run (drawing from the parent's, when there is one)."""
        if self.parent is not None:
            self.pot = self.parent.child(self.limits, "run")
        else:
            self.pot = BudgetPot(self.limits, "run", clock=self.clock)
        self._settings = None
        return self.pot

    def prepare(
        self, request: ModelRequest, *, wanted: int | None = None
    ) -> tuple[ModelRequest, Held | None, int]:
        """`request` with its `max_tokens` lowered to what budgets and the context
        window leave, the room held for it (to `settle` or `release`), and the raw
        input estimate; `BudgetExhausted` when not even a minimal reply fits. `wanted`
        asks for a larger reply than the settings (a retry after a cut).

        This runs before every request, so its common case (the next request of a
        run's loop: the same prompt and tool objects, the same conversation list grown
        by a reply and its tool results) is written out here without calls but the
        pot's `hold`, and makes no object but tuples; bench/bench_budget.py measures it
        against serialising the request. Anything else takes `_estimate`, which gives
        the same figures (tests/runner/test_metering.py compares them)."""
        calibration = self.calibration
        messages = request.messages
        if (
            request.system is self._system
            and request.tools is self._tools
            and request.system_stable == self._stable
            and type(messages) is History
            and messages.source is calibration.source
            and messages.length >= calibration.counted
        ):
            # the messages added since the previous request, sized as `grown` does
            length = messages.length
            chars = calibration.chars
            for message in messages.source[calibration.counted : length]:
                if type(message) is ToolResultMessage:
                    chars += len(message.content) + len(message.tool_call_id) + len(message.name)
                elif type(message) is AssistantMessage and not message.reasoning:
                    chars += len(message.text)
                    for call in message.tool_calls:
                        text = call.raw_arguments
                        chars += len(call.id) + len(call.name)
                        chars += len(text) if text else arguments_chars(text, call)
                else:
                    chars += message_chars(message)
            calibration.chars, calibration.counted = chars, length
            # `_tokens`, then `Calibration.corrected`
            raw = (chars + self._fixed + _ROUND_UP) // CHARS_PER_TOKEN + length * MESSAGE_OVERHEAD
            if calibration.reported and raw >= calibration.raw:
                estimate = calibration.reported + _ceil((raw - calibration.raw) * calibration.ratio)
            else:
                estimate = _ceil(raw * calibration.ratio)
        else:
            raw, estimate = self._estimate(request)
        self.last_estimate = estimate
        settings = request.settings
        if settings is self._settings and wanted is None:
            bounded, limit, minimum = self._reply
        else:
            bounded, limit, minimum = self._reply = self._reply_limits(settings, wanted)
            self._settings = settings if wanted is None else None
        room = (self.context_window or 0) - estimate
        if bounded and MIN_REPLY <= room < limit:
            limit = room
        pot = self.pot
        held: Held | None = None
        if pot is not None:
            taken = pot.hold(estimate, self.price, limit, minimum, self.last_input)
            if isinstance(taken, BudgetStop):
                self.last_capped = None
                raise BudgetExhausted(taken)
            if self._held is not None:
                self._older.append(self._held)
            self._held = held = taken
            limit = taken[1] - estimate
            self.last_capped = taken[3]
            self.last_seconds_left = taken[4]
        else:
            self.last_capped = self.last_seconds_left = None
        max_tokens = limit if bounded else None
        self.last_max_tokens = max_tokens
        if max_tokens != settings.max_tokens:
            request = replace(request, settings=replace(settings, max_tokens=max_tokens))
        return request, held, raw

    def _reply_limits(self, settings: ModelSettings, wanted: int | None) -> tuple[bool, int, int]:
        """Whether the reply gets a limit, the limit before the context window and the
        budgets lower it, and the smallest reply worth sending: the same for every
        request with these settings (`prepare` keeps them for the next)."""
        asked = wanted or settings.max_tokens
        # without a limit of its own, a request gets one only when a budget counts it
        # (the server's default otherwise: it may be below the context window's room)
        pot = self.pot
        bounded = True if asked else pot is not None and pot.counts_spending
        limit = asked or (UNKNOWN_REPLY if bounded else _UNLIMITED)
        minimum = MIN_REPLY + THINKING_MINIMUM if settings.thinking_budget else MIN_REPLY
        if asked and asked < minimum:  # a smaller reply asked for needs only its own room
            minimum = asked
        return bounded, limit, minimum

    def _estimate(self, request: ModelRequest) -> tuple[int, int]:
        """`prepare`'s estimate when its common case does not hold: the prompt's
        prefix compared with the previous request's, everything sized afresh that
        is not the same object as before."""
        note = self.prefix.check(request)
        if note is not None:
            self.notes.append(note)
        self._system, self._stable = request.system, request.system_stable
        self._tools = request.tools
        self._fixed = self.calibration.fixed_chars(request)
        return self.calibration.estimate(request)

    def settle(self, held: Held | None, usage: Usage, raw_estimate: int) -> float:
        """Price `usage`, give back the room `held` for it (charging what it cost, once),
        learn from the reported input."""
        cost = self.price.cost(usage) if self.price is not None else 0.0
        if held is not None and self._close(held):
            held[0].let_go(held, usage, cost)
        self.cost += cost
        self.calibration.learn(raw_estimate, usage.input_tokens)
        if usage.input_tokens:
            self.last_input = usage.input_tokens
        return cost

    def release(self, held: Held | None) -> None:
        """Give back the room `held` unspent (the request failed before any usage);
        nothing when it was settled or released already."""
        if held is not None and self._close(held):
            held[0].let_go(held)

    def _close(self, held: Held) -> bool:
        """Whether `held` was still open (now closed): room is given back only once."""
        if held is self._held:
            self._held = None
            return True
        for index, one in enumerate(self._older):
            if one is held:
                del self._older[index]
                return True
        return False

    def charge(self, usage: Usage) -> float:
        """Price and count spending that had no reservation (a compaction summary)."""
        cost = self.price.cost(usage) if self.price is not None else 0.0
        self.cost += cost
        if self.pot is not None:
            self.pot.charge(usage, cost)
        return cost

    def cut_by_budget(self, stop_reason: str) -> BudgetStop | None:
        """The budget that cut the latest reply: it stopped at a `max_tokens` that a
        budget had lowered (the answer is incomplete because the budget is spent)."""
        if self.last_capped is None or self.pot is None or stop_reason not in CUT_REASONS:
            return None
        return self.pot.used(self.last_capped)

    def budget_summary(self) -> dict[str, Any] | None:
        """The budget of each run (None without one): its `limits`, and what the
        latest run `used` of it (None before the first run)."""
        if not self.limits:
            return None
        used = self.pot.summary()["used"] if self.pot is not None else None
        return {"limits": self.limits.to_dict(), "used": used}

    def seconds_left(self) -> float | None:
        return self.pot.seconds_left() if self.pot is not None else None

    def tool_timeout(self, timeout: float) -> float:
        """A tool's timeout, ending no later than the wall-time deadline."""
        left = self.seconds_left()
        return timeout if left is None else max(0.001, min(timeout, left))

    def start_tool_call(self) -> BudgetStop | None:
        return self.pot.start_tool_call() if self.pot is not None else None
