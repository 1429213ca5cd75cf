"""`@path` in a message typed at the terminal: the workspace file is attached to it.

A mention is `@` at the start of a word followed by a path (`@src/app.py`); a word
such as `me@example.com` is not one. Each file is read as the `read` tool reads it
for the model (`Agent.read_file`: confined to the workspace, cut to the output limits,
a `deny` rule refuses it), and its text follows the message between markers naming
it, as an editor's embedded file arrives over ACP. The message is recorded with what
was attached, so a resumed session holds what the model was sent.

A mention that names no file of the workspace (`@alice`, a path outside it) is left
as typed; a file the rules refuse is left out with a note saying why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assembler.agent.agent import Agent

_MENTION = re.compile(r"(?<!\S)@(\S+)")
_TRAILING = ",.;:!?)]}'\""


@dataclass
class Attached:
    """The message to send and what happened to each mention."""

    text: str
    files: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def mentioned(text: str, workspace: Path) -> list[str]:
    """The workspace files `text` mentions, in order, each once."""
    root = Path(os.path.realpath(workspace))
    found: list[str] = []
    for match in _MENTION.finditer(text):
        word = match.group(1)
        for candidate in (word, word.rstrip(_TRAILING)):  # `see @a.py.` names a.py
            path = Path(os.path.realpath(root / candidate))
            if candidate and path.is_relative_to(root) and path.is_file():
                if candidate not in found:
                    found.append(candidate)
                break
    return found


async def attach(agent: Agent, text: str) -> Attached:
    """`text` with the files it mentions attached."""
    attached = Attached(text)
    blocks = []
    for path in mentioned(text, agent.state().workspace):
        result = await agent.read_file(path)
        if result.is_error:
            attached.refused.append(f"@{path}: {result.content}")
            continue
        blocks.append(f'<context source="{path}">\n{result.content.rstrip()}\n</context>')
        attached.files.append(path)
    if blocks:
        attached.text = "\n\n".join([text, *blocks])
    return attached
