"""The `prompt` entry of a session file: the system prompt a request carried, by
section with each section's template and sources, and the tool schemas sent.

Written by `SessionRecorder.request` before a model request whenever the prompt or the
schemas differ from the last ones this session recorded (usually once per run; again
when memory selection, a reload or a new tool changes them). `assemble view` shows
it; docs/sessions.md has the format. Sources name where a section's text came from:
the manifest line of `identity`, the template file of an override, the context
files, skill files, tools and memory records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from assembler.frozen import thaw
from assembler.manifest.model import Manifest
from assembler.messages import ForcedTool, ModelSettings, ToolSchema
from assembler.prompt.renderer import RenderedPrompt
from assembler.resources.loader import ResourceSnapshot
from assembler.tools.registry import ToolRegistry


def estimate_tokens(text: str) -> int:
    """About four characters per token (as `render --format json` estimates)."""
    return (len(text) + 3) // 4


def fingerprint(system: str, tools: Sequence[ToolSchema]) -> str:
    """One hash of what a request tells the model before the conversation."""
    schemas = [[t.name, t.description, t.parameters] for t in tools]
    data = json.dumps([system, schemas], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _manifest_line(manifest: Manifest, field: str) -> str:
    if manifest.source is None:
        return f"{manifest.path}: {field}"
    mark = manifest.source.locate((field,), key=True)
    return f"{manifest.path}:{mark.line}: {field}"


def section_sources(
    manifest: Manifest,
    snapshot: ResourceSnapshot,
    registry: ToolRegistry,
    memory: Sequence[str],
) -> dict[str, list[str]]:
    """Where each section's text came from."""
    return {
        "identity": [_manifest_line(manifest, "identity")]
        + ([_manifest_line(manifest, "context")] if manifest.context else []),
        "tools": [f"{tool.source}: {tool.name}" for tool in registry.tools()],
        "workspace": [f"workspace: {manifest.workspace.resolve()}"]
        + [f.source for f in snapshot.context_files],
        "skills": [f"skill: {skill.path}" for skill in snapshot.skills],
        "memory": [f"memory record: {name}" for name in memory],
    }


def prompt_payload(
    system: str,
    tools: Sequence[ToolSchema],
    rendered: RenderedPrompt | None,
    sources: dict[str, list[str]],
    tool_sources: dict[str, str],
) -> dict[str, Any]:
    """The entry's payload. Without the rendered sections (a provider of another kind,
    or a text that is not its last render), the prompt is one section, `system`."""
    if rendered is not None and rendered.text == system:
        sections = [
            {
                "name": section.name,
                "template": section.template,
                "sources": sources.get(section.name, []),
                "estimated_tokens": estimate_tokens(section.text),
                "text": section.text,
            }
            for section in rendered.sections
        ]
    else:
        sections = [
            {"name": "system", "template": "", "sources": [], "estimated_tokens":
             estimate_tokens(system), "text": system}
        ]  # fmt: skip
    return {
        "sha256": hashlib.sha256(system.encode("utf-8", "surrogatepass")).hexdigest(),
        "estimated_tokens": estimate_tokens(system),
        "sections": sections,
        "tools": [
            {
                "name": tool.name,
                "source": tool_sources.get(tool.name, ""),
                "description": tool.description,
                "parameters": tool.parameters,
            }
            for tool in tools
        ],
    }


def settings_record(settings: ModelSettings) -> dict[str, Any]:
    """The model settings a request carries (`tool_choice`, `temperature`, `max_tokens`,
    `extra`), as the `prompt` entry's `settings`: a replay compares them too."""
    choice = settings.tool_choice
    return {
        "tool_choice": {"tool": choice.name} if isinstance(choice, ForcedTool) else choice,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "extra": thaw(settings.extra) if settings.extra else {},
    }
