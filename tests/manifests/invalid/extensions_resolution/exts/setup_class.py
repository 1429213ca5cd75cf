"""`setup` is a class here."""


class setup:  # noqa: N801
    pass
