"""The prompt-cache plan of a first request, as `render --format json` shows it.

Providers cache a request's prefix: tools, then the system prompt, then the
conversation. What can be cached is what stays byte-identical from turn to turn: the
tool schemas and the system prompt up to its first per-turn section (this turn's
memory, rendered last for that reason). On the Anthropic wire the agent marks
breakpoints (`cache_control`) after the tools, after the stable part of the system
prompt and on the two latest user-side messages; OpenAI and compatible servers cache
a stable prefix by themselves; a replay caches nothing. Token figures are estimates
(characters / 4), like the rest of `render`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from assembler.prompt.renderer import PER_TURN_SECTIONS, stable_length

__all__ = ["ANTHROPIC_MINIMUM", "cache_plan"]

ANTHROPIC_MINIMUM = 1024
"""The shortest prefix Anthropic caches, in tokens (Sonnet and Opus; Haiku 2048)."""
_UNCACHED_PROVIDERS = frozenset({"scripted"})


def _tokens(chars: int) -> int:
    return (chars + 3) // 4


def cache_plan(
    prompt: str,
    tools: Iterable[tuple[str, str, Mapping[str, Any]]],
    provider: str | None,
    cache: bool = True,
) -> dict[str, Any]:
    """The plan for `prompt` and `tools` (name, description, parameters) on `provider`
    (None: not known yet, the user's default model)."""
    tool_chars = sum(
        len(name) + len(description) + len(json.dumps(parameters, default=str))
        for name, description, parameters in tools
    )
    stable = stable_length(prompt)
    stable_chars = len(prompt) if stable is None else stable
    if provider == "anthropic":
        mode = "breakpoints" if cache else "off"
    elif provider is None:
        mode = "unknown"
    else:
        mode = "none" if provider in _UNCACHED_PROVIDERS else "automatic"
    marked = mode == "breakpoints"
    blocks: list[dict[str, Any]] = [
        {
            "block": "tools",
            "cacheable": True,
            "breakpoint": marked,
            "estimated_tokens": _tokens(tool_chars),
        },
        {
            "block": "system",
            "cacheable": True,
            "breakpoint": marked,
            "estimated_tokens": _tokens(stable_chars),
        },
    ]
    if stable is not None:
        blocks.append(
            {
                "block": "system, per turn (" + ", ".join(PER_TURN_SECTIONS) + ")",
                "cacheable": False,
                "breakpoint": False,
                "estimated_tokens": _tokens(len(prompt) - stable_chars),
            }
        )
    blocks.append(
        {
            "block": "conversation",
            "cacheable": True,
            "breakpoint": marked,  # the last block of the two latest user-side messages
            "estimated_tokens": 0,
        }
    )
    prefix = _tokens(tool_chars) + _tokens(stable_chars)
    return {
        "mode": mode,
        "blocks": blocks,
        "stable_prefix_tokens": prefix,
        "cached_from_turn_2": mode in ("breakpoints", "automatic") and prefix >= ANTHROPIC_MINIMUM,
    }
