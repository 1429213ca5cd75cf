"""Redact things that look like secrets from tool output before the model sees them.

An observation change: the tool still ran and its raw output is in the audit trace;
only what the model is shown is rewritten. Use it for what the model should not
read, never to pretend that something did not happen (see docs/extensions.md).
"""

from __future__ import annotations

import re
from typing import Any

from assembler.extensions import ExtensionAPI, ResultPatch, ToolResultEvent

DEFAULT_PATTERNS = (
    r"sk-[A-Za-z0-9_-]{16,}",  # OpenAI-style keys
    r"(?i)(?:password|secret|token)\s*[:=]\s*\S+",
)


def setup(api: ExtensionAPI, options: dict[str, Any]) -> None:
    patterns = [re.compile(p) for p in options.get("patterns", DEFAULT_PATTERNS)]
    replacement = str(options.get("replacement", "[redacted]"))

    @api.on("tool_result")
    def redact(event: ToolResultEvent) -> ResultPatch | None:
        content = event.result.content
        for pattern in patterns:
            content = pattern.sub(replacement, content)
        return ResultPatch(content=content) if content != event.result.content else None
