"""Deeply read-only copies of JSON-like data, and plain copies of them.

A tool call's arguments are the model's proposal: the audit trace records them and
the conversation sends them back to the model. Extension handlers get `freeze`d
copies (every dict a `FrozenDict`, every list a `FrozenList`, all the way down), so
a handler cannot change the call it is judging, nor what the trace says was
proposed; a tool gets a `thaw`ed copy of its own, so it cannot change them either.

The frozen types subclass `dict` and `list`, so code written for JSON data keeps
working on them (`isinstance(x, list)`, `json.dumps`, iteration, `x | {...}` giving a
new dict); every method that would change one raises `TypeError`. Being copies, they
protect the original even from code that goes around them (`dict.__setitem__`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, NoReturn

_SCALARS = (str, int, float, bool, type(None), bytes)


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} is read-only: a handler sees the model's proposal and "
        "cannot change it (copy it with assembler.frozen.thaw, or return Block)"
    )


class FrozenDict(dict[str, Any]):
    """A dict that refuses every change."""

    __slots__ = ()

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses every change."""

    __slots__ = ()

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


for _name in ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem",
              "setdefault", "update"):  # fmt: skip
    setattr(FrozenDict, _name, _refuse)
for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "clear",
              "extend", "insert", "pop", "remove", "reverse", "sort"):  # fmt: skip
    setattr(FrozenList, _name, _refuse)


def freeze(value: Any) -> Any:
    """A read-only copy of `value`: mappings as `FrozenDict`, lists and tuples as
    `FrozenList`, scalars as they are, anything else deep-copied (it cannot reach
    back into the original)."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(freeze(item) for item in value)
    return copy.deepcopy(value)


def freeze_mapping(value: Mapping[str, Any]) -> FrozenDict:
    """`freeze` for a mapping, typed as one."""
    return FrozenDict({key: freeze(item) for key, item in value.items()})


def thaw(value: Any) -> Any:
    """A plain, independent copy: mappings as dicts, lists and tuples as lists, all
    the way down (what `json.loads` would give, and what tools expect)."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return copy.deepcopy(value)
