"""The prompt side of an agent: renderer and provider, from one snapshot."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assembler.manifest.model import Manifest
from assembler.prompt.provider import MemorySource, SystemPromptProvider
from assembler.prompt.renderer import (
    ContextFileView,
    DynamicPromptRenderer,
    SkillEntry,
    WorkspaceView,
)
from assembler.resources.loader import ResourceSnapshot
from assembler.tools.registry import ToolRegistry


def workspace_view(manifest: Manifest, snapshot: ResourceSnapshot) -> WorkspaceView:
    return WorkspaceView(
        str(manifest.workspace.resolve()),
        tuple(ContextFileView(f.path, f.content) for f in snapshot.context_files),
    )


def skill_entries(manifest: Manifest, snapshot: ResourceSnapshot) -> tuple[SkillEntry, ...]:
    """Skills as the catalog lists them; the path is relative to the workspace when
    the skill lives inside it, so the model can `read` it as written."""
    workspace = manifest.workspace.resolve()
    return tuple(
        SkillEntry(skill.name, skill.description, _shown_path(skill.path, workspace))
        for skill in snapshot.skills
    )


def _shown_path(path: Path, workspace: Path) -> str:
    resolved = path.resolve()
    if resolved.is_relative_to(workspace):
        return os.path.relpath(resolved, workspace)
    return str(resolved)


def make_prompt_provider(
    manifest: Manifest,
    snapshot: ResourceSnapshot,
    registry: ToolRegistry,
    memory: MemorySource | None = None,
    parameters: Mapping[str, Any] | None = None,
    *,
    keep_compiled: bool = False,
) -> SystemPromptProvider:
    """A fresh renderer (so its cache belongs to this agent) bound to live objects;
    `parameters` are the values of the manifest's parameters the templates may use;
    `keep_compiled` keeps its compiled templates for later runs (not in a dry run)."""
    return SystemPromptProvider(
        DynamicPromptRenderer(
            snapshot.templates,
            [p.name for p in manifest.parameters],
            keep_compiled=keep_compiled,
        ),
        identity=manifest.identity,
        context=manifest.context,
        registry=registry,
        workspace=workspace_view(manifest, snapshot),
        skills=skill_entries(manifest, snapshot),
        memory=memory,
        parameters=parameters,
    )
