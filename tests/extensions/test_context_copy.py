"""The copy `context` handlers get (issue 21, round 3): every change to it is noted,
and it is kept between requests only when nobody changed or kept it, so the cost of a
request does not grow with the conversation and a handler still never sees, nor
changes, anything but a copy of the conversation as it is."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import pytest

from assembler.extensions.context_copy import ContextCopies, ContextCopy
from assembler.messages import AssistantMessage, History, Message, UserMessage


def conversation(size: int) -> list[Message]:
    return [UserMessage(f"m{i}") if i % 2 == 0 else AssistantMessage(text=f"m{i}")
            for i in range(size)]  # fmt: skip


def test_a_copy_nobody_changed_or_kept_is_brought_up_to_date_not_made_again() -> None:
    copies = ContextCopies()
    messages = conversation(3)
    first = copies.take(messages)
    assert first == messages and first is not messages
    assert copies.give_back(first, messages)
    was = weakref.ref(first)
    del first  # the handlers are done with it; nobody holds it

    messages.append(UserMessage("new"))
    second = copies.take(messages)
    assert was() is second  # the same list, with only the new message appended
    assert second == messages and not second.changed


def test_a_copy_someone_kept_is_never_handed_out_again() -> None:
    copies = ContextCopies()
    messages = conversation(2)
    kept = copies.take(messages)
    assert copies.give_back(kept, messages)  # a handler still holds `kept`

    messages.append(UserMessage("later"))
    fresh = copies.take(messages)
    assert fresh is not kept and fresh == messages
    assert copies.give_back(fresh, messages)
    was = weakref.ref(fresh)
    del fresh
    messages.append(UserMessage("and later"))
    assert copies.take(messages) is was()  # a copy nobody kept is kept again
    assert kept == conversation(2)  # what the handler kept stays what it was given


CHANGES: list[Callable[[ContextCopy], Any]] = [
    lambda c: c.append(UserMessage("x")),
    lambda c: c.extend([UserMessage("x")]),
    lambda c: c.insert(0, UserMessage("x")),
    lambda c: c.pop(),
    lambda c: c.remove(c[0]),
    lambda c: c.clear(),
    lambda c: c.reverse(),
    lambda c: c.sort(key=str),
    lambda c: c.__setitem__(0, UserMessage("x")),
    lambda c: c.__delitem__(0),
    lambda c: c.__setitem__(slice(0, 1), []),
    lambda c: c.__iadd__([UserMessage("x")]),
    lambda c: c.__imul__(2),
]


def _kept(copies: ContextCopies, messages: list[Message]) -> weakref.ref[ContextCopy]:
    """Take a copy for a request that changed nothing and give it back (kept); only a
    weak reference stays, so nothing but `copies` holds it."""
    copy = copies.take(messages)
    assert copies.give_back(copy, messages)
    return weakref.ref(copy)


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_in_place_is_noted_and_such_a_copy_is_not_kept(
    change: Callable[[ContextCopy], Any],
) -> None:
    copies = ContextCopies()
    messages = conversation(4)
    copy = copies.take(messages)
    change(copy)
    assert copy.changed
    assert not copies.give_back(copy, messages)  # the request gets the changed copy
    del copy
    assert messages == conversation(4)  # the conversation itself never changed
    fresh = copies.take(messages)
    assert fresh == messages and not fresh.changed


def test_a_change_made_around_the_copys_methods_is_caught_by_its_length() -> None:
    copies = ContextCopies()
    messages = conversation(2)
    copy = copies.take(messages)
    list.append(copy, UserMessage("behind its back"))  # not through ContextCopy.append
    assert not copies.give_back(copy, messages)


def test_another_conversation_list_gets_a_fresh_copy() -> None:
    """Compaction and resuming bind a new list; a shorter list, or one that no longer
    starts with the same messages, is not the conversation the copy was made of."""
    copies = ContextCopies()
    messages = conversation(4)
    was = _kept(copies, messages)

    compacted = [UserMessage("summary"), *messages[2:]]
    fresh = copies.take(compacted)
    assert fresh == compacted and was() is None  # let go, not reused


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda m: m.__delitem__(slice(1, None)),  # shorter than the copy
        lambda m: m.__setitem__(0, UserMessage("rewritten")),  # another first message
        lambda m: m.__setitem__(3, UserMessage("rewritten")),  # another last one
    ],
)
def test_a_list_rewritten_in_place_is_not_taken_for_a_longer_one(
    rewrite: Callable[[list[Message]], Any],
) -> None:
    copies = ContextCopies()
    messages = conversation(4)
    was = _kept(copies, messages)
    rewrite(messages)
    messages.append(UserMessage("new"))
    fresh = copies.take(messages)
    assert fresh == messages and was() is None


def test_only_a_plain_list_is_kept_for_next_time() -> None:
    # A view or a tuple (another hook's output) may not be the runner's list, the
    # only one known to be only ever appended to.
    copies = ContextCopies()
    source = conversation(3)
    for messages in (History(source), tuple(source)):
        copy = copies.take(messages)
        assert copy == list(messages)
        assert copies.give_back(copy, messages)  # unchanged: the request uses `messages`
        was = weakref.ref(copy)
        del copy
        fresh = copies.take(messages)
        assert fresh == list(messages) and was() is None
