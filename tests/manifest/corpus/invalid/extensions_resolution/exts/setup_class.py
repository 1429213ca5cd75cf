"""`setup` is a class here."""


class setup:
    pass
