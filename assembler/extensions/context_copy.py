"""The copy of the conversation that `context` handlers get, kept between requests.

Handlers may change the list they are given in place, so they get a copy: the
conversation itself never changes. Copying the whole history before every request,
and comparing the copy with it afterwards, made each turn cost more than the one
before (issue 21). Here:

- The copy notes every change made through its methods (`changed`), so "did the
  chain change anything" is answered without looking at the messages.
- A copy that no handler changed, and that nobody else holds afterwards (CPython's
  reference count says so: a handler that kept the list it was given, or a late one
  still running, holds it), is kept; at the next request of the same conversation
  only the messages added since are appended to it. The runner's conversation list
  is only ever appended to (compaction and resuming bind a new list: see
  `messages.History`), so a kept copy of the same list, as long as before or
  shorter, is a copy of its first messages. Any other case gets a fresh copy.

A handler therefore always gets a list equal to the conversation it is about,
whether the copy is fresh or kept; a list a handler kept from an earlier request is
never reused, so it stays what it was.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from assembler.messages import Message

_CHANGING = ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "clear",
             "extend", "insert", "pop", "remove", "reverse", "sort")  # fmt: skip
_refcount: Callable[[object], int] | None = getattr(sys, "getrefcount", None)


class ContextCopy(list[Message]):
    """A copy of the messages that notes whether anything changed it."""

    __slots__ = ("__weakref__", "changed")

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        super().__init__(messages)
        self.changed = False

    def catch_up(self, source: list[Message]) -> None:
        """Append what `source` has beyond this copy's length (bringing a kept copy up
        to date is not a handler's change)."""
        list.extend(self, source[len(self) :])


def _noting(name: str) -> Callable[..., Any]:
    change = getattr(list, name)

    def changing(self: ContextCopy, *args: Any, **kwargs: Any) -> Any:
        self.changed = True
        return change(self, *args, **kwargs)

    changing.__name__ = changing.__qualname__ = name
    return changing


for _name in _CHANGING:
    setattr(ContextCopy, _name, _noting(_name))


def _references(value: object) -> int:
    return _refcount(value) if _refcount is not None else sys.maxsize


def _alone() -> int:
    probe = ContextCopy()  # held by this one name, as `take` holds a kept copy
    return _references(probe)


_ALONE = _alone() if _refcount is not None else -1  # no count: never keep a copy
"""What `_references` says of a list held by one name of its caller only (the count
depends on the interpreter, so it is measured, not assumed)."""


class ContextCopies:
    """Hands out the copy for each request, keeping one no handler changed or kept."""

    def __init__(self) -> None:
        self._kept: ContextCopy | None = None
        self._source: list[Message] | None = None  # the conversation it is a copy of

    def take(self, messages: Sequence[Message]) -> ContextCopy:
        """A copy of `messages` for this request's handlers: the kept one brought up
        to date when it can be, else a fresh one."""
        kept, source = self._kept, self._source
        self._kept = self._source = None
        if (
            kept is not None
            and messages is source
            and _references(kept) == _ALONE  # nobody else holds it
            and not kept.changed
            and _prefix_of(kept, messages)
        ):
            kept.catch_up(messages)
            return kept
        return ContextCopy(messages)

    def give_back(self, copy: ContextCopy, messages: Sequence[Message]) -> bool:
        """After a chain that returned no list of its own: True when the copy is the
        conversation unchanged (the request can use `messages` itself); the copy is
        then kept for the next request of the same conversation list."""
        if copy.changed or len(copy) != len(messages):  # a change, even behind our back
            return False
        if type(messages) is list:
            self._kept, self._source = copy, messages
        return True


def _prefix_of(kept: ContextCopy, source: list[Message]) -> bool:
    """The conversation still starts with the kept copy (it is only appended to;
    its ends are checked as well, which costs nothing)."""
    length = len(kept)
    if length > len(source):
        return False
    return length == 0 or (source[0] is kept[0] and source[length - 1] is kept[-1])
