"""Extensions: trusted Python that adds tools, blocks calls and rewrites what the
model sees, in manifest order. See docs/extensions.md."""

from assembler.extensions.api import (
    Block,
    ExtensionAPI,
    ResultPatch,
    ToolCallEvent,
    ToolResultEvent,
)

__all__ = ["Block", "ExtensionAPI", "ResultPatch", "ToolCallEvent", "ToolResultEvent"]
