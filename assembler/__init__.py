"""agent-assembler: turn a YAML manifest into a running AI agent."""

from __future__ import annotations

__version__ = "0.1.0"
