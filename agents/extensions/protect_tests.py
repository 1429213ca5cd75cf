"""Block edits and writes to test files before they happen.

The tests of the shipping example are its specification: a fix that changes them
proves nothing. Blocking in `tool_call` means the write never happens; rewriting the
result text in `tool_result` would only hide a write that did (see docs/extensions.md).
"""

from __future__ import annotations

import os
from fnmatch import fnmatch
from typing import Any

from assembler.extensions import Block, ExtensionAPI, ToolCallEvent

DEFAULT_PATTERNS = ("tests/*", "test_*.py", "*_test.py")


def setup(api: ExtensionAPI, options: dict[str, Any]) -> None:
    patterns = tuple(options.get("patterns", DEFAULT_PATTERNS))
    guarded = frozenset(options.get("tools", ("edit", "write")))
    workspace = os.path.realpath(api.workspace)

    @api.on("tool_call")
    def protect_tests(event: ToolCallEvent) -> Block | None:
        if event.name not in guarded:
            return None
        target = str(event.arguments.get("path", ""))
        absolute = os.path.realpath(os.path.join(workspace, target))
        relative = os.path.relpath(absolute, workspace)
        if any(fnmatch(relative, p) or fnmatch(os.path.basename(relative), p) for p in patterns):
            return Block(
                f"{relative} is a test file, and the tests are this repository's "
                "specification: fix the source instead"
            )
        return None
