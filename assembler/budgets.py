"""What a budget limits, as the manifest, the eval file and the command line say it.

A plain value shared by the layers that read budgets (the manifest, the CLI, the
evaluation) and the runner that enforces them (`runner/budget.py`); it knows nothing
of either. Every limit is optional; a budget with none limits nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ["BUDGET_NAMES", "BudgetLimits", "parse_duration"]

BUDGET_NAMES = ("cost_usd", "tokens", "wall_time", "tool_calls")
"""The budgets, as the manifest and results name them."""

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([hms])\s*")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(value: float | int | str) -> float:
    """Seconds from `900`, `"90s"`, `"15m"` or `"1h30m"`; `ValueError` for anything
    else (the schema refuses those first, at the manifest's line and column)."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip()
        position, seconds = 0, 0.0
        while position < len(text):
            found = _DURATION.match(text, position)
            if found is None or found.end() == position:
                raise ValueError(
                    f"not a duration: {value!r} (use seconds, or units h, m and s: 15m, 1h30m)"
                )
            seconds += float(found[1]) * _UNIT_SECONDS[found[2]]
            position = found.end()
        if not text:
            raise ValueError("an empty duration")
    if not seconds > 0:
        raise ValueError(f"a duration must be more than 0 seconds, not {value!r}")
    return seconds


@dataclass(frozen=True)
class BudgetLimits:
    """The most a run may spend: US dollars, tokens (input and output, cached input
    included), seconds of wall time, tool calls that run. None: no limit."""

    cost_usd: float | None = None
    tokens: int | None = None
    wall_time: float | None = None
    tool_calls: int | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> BudgetLimits:
        """From a validated `budget` mapping (`wall_time` as seconds or `15m`)."""
        if not data:
            return cls()
        wall = data.get("wall_time")
        cost = data.get("cost_usd")
        return cls(
            cost_usd=None if cost is None else float(cost),
            tokens=data.get("tokens"),
            wall_time=None if wall is None else parse_duration(wall),
            tool_calls=data.get("tool_calls"),
        )

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def overridden(self, other: BudgetLimits | None) -> BudgetLimits:
        """These limits with every limit `other` sets put in their place (the command
        line over the manifest)."""
        if other is None:
            return self
        changes = {f.name: getattr(other, f.name) for f in fields(other)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict[str, float | int]:
        """The limits that are set, by name."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }
