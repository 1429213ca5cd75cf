"""Shipping fees for parcels, in euro cents."""

import math

BASE_FEE_CENTS = 499
PER_EXTRA_KG_CENTS = 150
FREE_SHIPPING_THRESHOLD_CENTS = 5000


def shipping_fee(weight_kg: float, order_total_cents: int) -> int:
    """The fee for one parcel.

    The first kilogram is covered by the base fee; every started kilogram above it
    costs PER_EXTRA_KG_CENTS. Orders of FREE_SHIPPING_THRESHOLD_CENTS or more ship free.
    """
    if weight_kg <= 0:
        raise ValueError("a parcel weighs something")
    if order_total_cents >= FREE_SHIPPING_THRESHOLD_CENTS:
        return 0
    extra_kg = max(0, math.floor(weight_kg) - 1)
    return BASE_FEE_CENTS + extra_kg * PER_EXTRA_KG_CENTS
