"""Python tools for the example agents: plain functions, typed and documented.

The manifest names them as `shop_tools:quote_fee`; the tool's schema comes from the
type hints and the docstring, so there is nothing else to declare.
"""

from __future__ import annotations

import math


def quote_fee(weight_kg: float, order_total_cents: int = 0) -> str:
    """Quote the shipping fee of a parcel.

    Args:
        weight_kg: The parcel's weight in kilograms.
        order_total_cents: The order's total in euro cents; 50 EUR or more ships free.
    """
    if order_total_cents >= 5000:
        return "0 cents (free shipping)"
    extra = max(0, math.ceil(weight_kg) - 1)
    return f"{499 + extra * 150} cents"
