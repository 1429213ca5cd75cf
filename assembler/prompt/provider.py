"""The zero-argument system-prompt provider the runner calls before every request.

It binds the renderer to the live objects at build time: the tool registry (read
each call, so a tool registered mid-session appears in the next prompt), the memory
selection of the current turn (also read each call), and what is fixed for the
agent's life: identity, canonical context, workspace view and the skill snapshot.
What is fixed is validated and canonicalised once, here, not every turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assembler.prompt.canonical import canonical_json
from assembler.prompt.renderer import (
    DynamicPromptRenderer,
    MemoryEntry,
    RenderedPrompt,
    SkillEntry,
    WorkspaceView,
)
from assembler.tools.registry import ToolRegistry

MemorySource = Callable[[], Sequence[MemoryEntry]]


class SystemPromptProvider:
    """`provider()` returns this turn's system prompt."""

    def __init__(
        self,
        renderer: DynamicPromptRenderer,
        *,
        identity: str,
        context: Mapping[str, Any],
        registry: ToolRegistry,
        workspace: WorkspaceView,
        skills: Sequence[SkillEntry] = (),
        memory: MemorySource | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        self.renderer = renderer
        self.identity = identity
        self.context_json = canonical_json(context)
        self.registry = registry
        self.workspace = workspace
        self.skills = tuple(skills)
        self.memory = memory
        self.parameters: Mapping[str, Any] = dict(parameters or {})
        """The values of the agent's parameters for the run in progress: read every
        call, so values given with a prompt (RPC) reach that prompt's requests."""
        self.last: RenderedPrompt | None = None
        """The latest render, with its sections (the session's `prompt` entry)."""
        self.last_memory: tuple[str, ...] = ()
        """The names of the memory records in `last`."""

    def render(self) -> RenderedPrompt:
        tools, guidelines = self.registry.prompt_view()
        memory = tuple(self.memory()) if self.memory is not None else ()
        rendered = self.renderer.render_sections(
            identity=self.identity,
            context=self.context_json,
            tools=tools,
            guidelines=guidelines,
            workspace=self.workspace,
            skills=self.skills,
            memory=memory,
            parameters=self.parameters,
        )
        self.last, self.last_memory = rendered, tuple(entry.name for entry in memory)
        return rendered

    def __call__(self) -> str:
        return self.render().text
