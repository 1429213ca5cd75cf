"""A `session/prompt`'s content blocks as the one text the agent is prompted with.

ACP requires every agent to take text and resource links; this agent also takes
embedded text resources (`promptCapabilities.embeddedContext`), which is how editors
send an @-mentioned file or selection. A resource link becomes the file's path
(relative to the workspace when it is inside it), so the model can `read` it; an
embedded text resource becomes the text itself, between markers naming where it is
from. Images, audio and binary resources are not advertised and are refused, rather
than dropped without a word.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

Block = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


class UnsupportedContent(ValueError):
    """A block this agent did not advertise (image, audio, a binary resource)."""


def prompt_text(blocks: Sequence[Block], workspace: Path) -> str:
    """The prompt's text, blocks joined in order; `UnsupportedContent` for a block
    that cannot be text."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(shown_uri(block.uri, workspace))
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(
            block.resource, TextResourceContents
        ):
            where = shown_uri(block.resource.uri, workspace)
            text = block.resource.text
            parts.append(f'<context source="{where}">\n{text.rstrip()}\n</context>')
        else:
            kind = block.type if not isinstance(block, EmbeddedResourceContentBlock) else "blob"
            raise UnsupportedContent(
                f"this agent takes text, resource links and embedded text, not {kind} content"
            )
    return "\n".join(part for part in parts if part)


def shown_uri(uri: str, workspace: Path) -> str:
    """A `file:` URI as a path (relative to the workspace inside it); other URIs as
    they are."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = os.path.normpath(unquote(parsed.path))
    try:
        return Path(path).relative_to(workspace).as_posix()
    except ValueError:
        return path
