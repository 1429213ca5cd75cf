"""Deeply read-only views of JSON-like data, and plain copies of them.

A tool call's arguments are the model's proposal: the audit trace records them and
the conversation sends them back to the model. Extension handlers get `freeze`d
views (mappings become `MappingProxyType`, lists become tuples, all the way down),
so a handler cannot change the call it is judging, nor what the trace says was
proposed; a tool gets a `thaw`ed copy of its own, so it cannot change them either.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

_SCALARS = (str, int, float, bool, type(None), bytes)


def freeze(value: Any) -> Any:
    """A read-only view of `value`: mappings as `MappingProxyType` over a new dict,
    lists and tuples as tuples, scalars as they are, anything else deep-copied (it
    cannot reach back into the original)."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return copy.deepcopy(value)


def freeze_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """`freeze` for a mapping, typed as one."""
    frozen: Mapping[str, Any] = freeze(value)
    return frozen


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
