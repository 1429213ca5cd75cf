"""Recorded system prompts: the `prompt` entries of a session (docs/sessions.md), each
with its sections, their sources and token estimates, the tool schemas sent, and what
changed since the prompt before it.

A session records a prompt entry before a model request whenever the prompt or the
tool schemas differ from the last one it recorded, so the prompt of turn N is the
latest prompt entry before that turn's response. Sessions written before prompts were
recorded have none; the page says so.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assembler.errors import SessionError
from assembler.view.session_file import SessionFile


@dataclass
class SectionView:
    name: str
    template: str
    sources: list[str]
    tokens: int
    text: str
    change: str = ""
    """`added`, `changed` or empty (`unchanged` when there is a previous prompt)."""
    diff: str = ""


@dataclass
class ToolView:
    name: str
    source: str
    description: str
    parameters: str
    change: str = ""


@dataclass
class PromptView:
    entry: str
    time: str
    turn: int
    tokens: int
    characters: int
    sha256: str
    sections: list[SectionView]
    tools: list[ToolView]
    previous: str = ""
    removed_sections: list[str] = field(default_factory=list)
    removed_tools: list[str] = field(default_factory=list)
    text: str = ""


def prompt_entries(session: SessionFile) -> list[tuple[str, int, str]]:
    """(entry id, turn it first applies to, time) of each recorded prompt, in order."""
    out = []
    for placed in session.order():
        info = placed.line.info
        if info.type == "prompt":
            out.append((info.id, placed.turn + 1, info.time))
    out.sort(key=lambda item: item[2])
    return out


def estimate(text: str) -> int:
    """About four characters per token, as `render --format json` estimates."""
    return (len(text) + 3) // 4


def _sections(record: Mapping[str, Any]) -> list[SectionView]:
    out = []
    raw = record.get("sections")
    for section in raw if isinstance(raw, list) else []:
        if not isinstance(section, Mapping):
            continue
        text = section.get("text") if isinstance(section.get("text"), str) else ""
        assert isinstance(text, str)
        sources = section.get("sources")
        tokens = section.get("estimated_tokens")
        out.append(
            SectionView(
                name=str(section.get("name", "?")),
                template=str(section.get("template") or ""),
                sources=[str(s) for s in sources] if isinstance(sources, list) else [],
                tokens=tokens if isinstance(tokens, int) else estimate(text),
                text=text,
            )
        )
    if not out and isinstance(record.get("system"), str):
        out.append(SectionView("system", "", [], estimate(record["system"]), record["system"]))
    return out


def _tools(record: Mapping[str, Any]) -> list[ToolView]:
    out = []
    raw = record.get("tools")
    for tool in raw if isinstance(raw, list) else []:
        if isinstance(tool, Mapping):
            out.append(
                ToolView(
                    name=str(tool.get("name", "?")),
                    source=str(tool.get("source") or ""),
                    description=str(tool.get("description") or ""),
                    parameters=json.dumps(
                        tool.get("parameters"), ensure_ascii=False, indent=2, sort_keys=True
                    ),
                )
            )
    return out


def whole_text(sections: list[SectionView]) -> str:
    """The prompt as sent: each section under its `## name` heading, one blank line
    between them (a prompt recorded as one `system` section is its text alone)."""
    if len(sections) == 1 and sections[0].name == "system":
        return sections[0].text
    return "\n\n".join(f"## {s.name}\n{s.text}" for s in sections)


def prompt_view(session: SessionFile, entry: str) -> PromptView:
    """The prompt entry `entry`, compared with the prompt recorded before it."""
    entries = prompt_entries(session)
    ids = [e[0] for e in entries]
    if entry not in ids:
        raise SessionError(f"session {session.header.get('id')} has no prompt entry {entry!r}")
    at = ids.index(entry)
    lines = {placed.line.info.id: placed.line for placed in session.order()}
    record = session.parse(lines[entry])
    sections, tools = _sections(record), _tools(record)
    view = PromptView(
        entry=entry,
        time=entries[at][2],
        turn=entries[at][1],
        tokens=sum(s.tokens for s in sections),
        characters=sum(len(s.text) for s in sections),
        sha256=str(record.get("sha256") or ""),
        sections=sections,
        tools=tools,
        text=whole_text(sections),
    )
    if at == 0:
        return view
    previous = session.parse(lines[ids[at - 1]])
    view.previous = ids[at - 1]
    before = {s.name: s for s in _sections(previous)}
    for section in sections:
        old = before.get(section.name)
        if old is None:
            section.change = "added"
        elif old.text != section.text:
            section.change = "changed"
            section.diff = "".join(
                difflib.unified_diff(
                    old.text.splitlines(keepends=True),
                    section.text.splitlines(keepends=True),
                    fromfile=f"{section.name} (before)",
                    tofile=f"{section.name} (this turn)",
                    n=2,
                )
            )
        else:
            section.change = "unchanged"
    view.removed_sections = [name for name in before if name not in {s.name for s in sections}]
    old_tools = {t.name: t for t in _tools(previous)}
    for tool in tools:
        old_tool = old_tools.get(tool.name)
        if old_tool is None:
            tool.change = "added"
        elif (old_tool.description, old_tool.parameters) != (tool.description, tool.parameters):
            tool.change = "changed"
    view.removed_tools = [name for name in old_tools if name not in {t.name for t in tools}]
    return view
