"""`BudgetLimits` and durations: what the manifest, the eval file and the command line
say a budget is."""

from __future__ import annotations

import pytest

from assembler.budgets import BudgetLimits, parse_duration


@pytest.mark.parametrize(
    ("written", "seconds"),
    [(900, 900.0), (1.5, 1.5), ("90s", 90.0), ("15m", 900.0), ("1h30m", 5400.0), (" 2h ", 7200.0)],
)
def test_durations(written: float | str, seconds: float) -> None:
    assert parse_duration(written) == seconds


@pytest.mark.parametrize("written", ["", "15", "15x", "m", "1h-5m", 0, "0s", -3, True])
def test_what_is_not_a_duration(written: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(written)  # type: ignore[arg-type]


def test_limits_from_the_manifest_and_overridden_limit_by_limit() -> None:
    manifest = BudgetLimits.from_mapping({"cost_usd": 2.5, "tokens": 400_000, "wall_time": "15m"})
    assert manifest == BudgetLimits(cost_usd=2.5, tokens=400_000, wall_time=900.0)
    command_line = BudgetLimits(tokens=1_000)
    assert manifest.overridden(command_line) == BudgetLimits(2.5, 1_000, 900.0)
    assert manifest.overridden(None) is manifest
    assert not BudgetLimits() and BudgetLimits(tool_calls=1)
    assert BudgetLimits(tokens=5, wall_time=2.0).to_dict() == {"tokens": 5, "wall_time": 2.0}
    assert BudgetLimits.from_mapping(None) == BudgetLimits()
