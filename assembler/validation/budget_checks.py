"""Checks of `limits.budget` beyond the schema: a budget in dollars needs a price.

A `cost_usd` budget is kept by pricing every response; a model whose price is neither
in the built-in table (`assembler.pricing`) nor in the manifest's `model.price` cannot
be priced, so the budget could never stop anything: `validate` refuses it, at the
budget's line (the run refuses it again when it starts, for a model chosen there).
A wall time the schema's pattern accepts but that is no time (`0s`) is refused here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from assembler.budgets import parse_duration
from assembler.errors import Issue
from assembler.validation.context import CheckContext, mapping

__all__ = ["check_budget"]


def check_budget(ctx: CheckContext) -> Iterator[Issue]:
    budget = mapping(mapping(ctx.data.get("limits")).get("budget"))
    wall = budget.get("wall_time")
    if isinstance(wall, str):
        try:
            parse_duration(wall)
        except ValueError as e:
            yield ctx.issue(("limits", "budget", "wall_time"), str(e))
    if budget.get("cost_usd") is None:
        return
    model = _model(ctx.data.get("model"))
    if model is None:  # the user's default model, chosen at run time: checked there
        return
    provider, name, priced = model
    # imported here for start-up cost: only a `cost_usd` budget needs the price table
    from assembler.pricing import known_price

    if priced or known_price(provider, name) is not None:
        return
    yield ctx.issue(
        ("limits", "budget", "cost_usd"),
        f"a `cost_usd` budget needs the price of {provider}:{name}, which is not in the "
        "price table: set `model.price: {input, output}` (US dollars per million tokens), "
        "or budget `tokens` instead",
    )


def _model(raw: Any) -> tuple[str, str, bool] | None:
    """(provider, name, has its own price) of the manifest's model, when it names one."""
    if isinstance(raw, str) and ":" in raw:
        provider, name = raw.split(":", 1)
        return provider, name, False
    if isinstance(raw, dict) and isinstance(raw.get("provider"), str):
        model = raw.get("name")
        return raw["provider"], model if isinstance(model, str) else "", "price" in raw
    return None
