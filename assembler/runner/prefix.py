"""Noticing a request prefix that changes between turns: the prompt cache misses.

Providers cache a request's prefix: the tool schemas, then the system prompt up to its
per-turn part (`ModelRequest.system_stable`). When either changes from one request to
the next (an extension that rewrites the prompt each turn, a date in a template, a
tool set that changes), every request pays its whole prompt again. `PrefixWatch`
compares each request's prefix with the previous one's and says so, once per runner:
the cost of one string comparison per request, and of none while the prompt and the
tool tuple are the very objects of the previous request.
"""

from __future__ import annotations

from assembler.messages import ModelRequest, ToolSchema

__all__ = ["PrefixWatch"]


class PrefixWatch:
    """Remembers the previous request's cacheable prefix."""

    def __init__(self) -> None:
        self._system: str | None = None
        self._tools: tuple[ToolSchema, ...] | None = None
        self._whole: str | None = None
        self._stable: int | None = None
        self.warned = False

    def check(self, request: ModelRequest) -> str | None:
        """A warning the first time the tools or the stable system prompt differ from
        the previous request's; None otherwise."""
        whole, stable, tools = request.system, request.system_stable, request.tools
        if whole is self._whole and tools is self._tools and stable == self._stable:
            return None  # the very objects of the previous request: nothing to compare
        self._whole, self._stable = whole, stable
        system = whole if stable is None else whole[:stable]
        changed = ""
        if self._system is not None and system != self._system:
            changed = "the system prompt before its per-turn part"
        elif self._tools is not None and tools is not self._tools and tools != self._tools:
            changed = "the tool schemas"
        self._system, self._tools = system, tools
        if not changed or self.warned:
            return None
        self.warned = True
        return (
            f"{changed} changed since the previous request, so the provider's prompt cache "
            "cannot serve it (keep per-turn text, such as a date or a counter, out of the "
            "prompt's stable sections and out of tool descriptions)"
        )
