"""The agent: `build_agent` (the one front door), the `Agent` it returns, and the
parts of the build (model choice, services, tool collection, lifecycle, preview).

The order of assembly is written once, in `build.py`.

`Agent`, `RunResult` and `build_agent` are imported on first use, for start-up cost:
`render --dry-run` imports `agent.preview`, and importing this package must not drag
in the runner, the providers, memory and asyncio that only a built agent needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assembler.agent.agent import Agent, RunResult
    from assembler.agent.build import build_agent

_EXPORTS = {
    "Agent": "assembler.agent.agent",
    "RunResult": "assembler.agent.agent",
    "build_agent": "assembler.agent.build",
}

__all__ = ["Agent", "RunResult", "build_agent"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assembler.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
