def quote(weight: float) -> str:
    """Quote a fee."""
    return str(weight)


def refund(order: str) -> str:
    """Refund an order."""
    return order
