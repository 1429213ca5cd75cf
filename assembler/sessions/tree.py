"""A session's entries as a tree, for navigation (`/tree`, `sessions show`).

One file holds a tree because steering, retrying or forking in place from an earlier
entry adds a second child to it instead of destroying what came after.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from assembler.sessions.records import Entry


@dataclass(frozen=True)
class TreeNode:
    """One entry of `Session.tree()` and the entries that continue from it."""

    entry: Entry
    children: tuple[TreeNode, ...] = ()


def entry_tree(entries: Iterable[Entry]) -> list[TreeNode]:
    """Roots first (entries whose parent is missing count as roots), children in
    file order; an entry id seen twice keeps its first line."""
    children: dict[str | None, list[Entry]] = {}
    known: set[str] = set()
    for entry in entries:
        if entry.id in known:
            continue
        known.add(entry.id)
        children.setdefault(entry.parent, []).append(entry)

    roots = [
        e
        for parent, kids in children.items()
        if parent is None or parent not in known
        for e in kids
    ]
    # Built bottom-up without recursion: a session is a chain thousands deep.
    order: list[Entry] = []
    stack = list(reversed(roots))
    while stack:
        entry = stack.pop()
        order.append(entry)
        stack.extend(reversed(children.get(entry.id, ())))
    built: dict[str, TreeNode] = {}
    for entry in reversed(order):
        kids = tuple(built[c.id] for c in children.get(entry.id, ()))
        built[entry.id] = TreeNode(entry, kids)
    return [built[entry.id] for entry in roots]
