"""The agent: `build_agent` (the one front door), the `Agent` it returns, and the
parts of the build (model choice, services, tool collection, lifecycle, preview).

The order of assembly is written once, in `build.py`.
"""

from __future__ import annotations

from assembler.agent.agent import Agent, RunResult
from assembler.agent.build import build_agent
from assembler.agent.subagents import Subagent

__all__ = ["Agent", "RunResult", "Subagent", "build_agent"]
