"""An extension file without `setup`."""


def register(api: object) -> None:
    del api
