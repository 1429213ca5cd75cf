"""The system prompt, section by section, with a cache keyed on what the model sees.

Order and omission live here, in code: identity, tools, workspace always; skills and
memory only when there is something to show, and only ever appended at the tail.
"There are no tools" is a fact the model needs, so an empty tool catalog reads
`(none)`; "there are no skills" is not, so the section goes (DESIGN.md section 4).

The cache key holds all six model-visible inputs. Leaving one out would not merely
cost speed: it would send the model a stale prompt (a tool registered this turn
that it never hears of). Inputs are validated before the cache is written, so an
invalid context raises and leaves earlier entries intact.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assembler.errors import RenderError, TemplateError
from assembler.manifest.model import SECTION_NAMES, TemplateOverride
from assembler.prompt.canonical import canonical_json
from assembler.prompt.templates import (
    TemplateOrigin,
    TemplateProblem,
    check_override,
    compile_template,
    default_template_text,
    render_template,
    try_render,
)
from assembler.tools.registry import ToolEntry

if TYPE_CHECKING:
    from jinja2 import Template

NO_TOOLS = "(none)"
CACHE_SIZE = 64


@dataclass(frozen=True)
class ContextFileView:
    """A context file as the workspace section shows it."""

    path: str
    content: str


@dataclass(frozen=True)
class WorkspaceView:
    """The workspace as the prompt shows it: its absolute path and context files."""

    path: str
    context_files: tuple[ContextFileView, ...] = ()


@dataclass(frozen=True)
class SkillEntry:
    """A skill as the skills section lists it."""

    name: str
    description: str
    path: str


@dataclass(frozen=True)
class MemoryEntry:
    """A selected memory record as the memory section shows it."""

    name: str
    type: str
    description: str
    body: str


@dataclass(frozen=True)
class Section:
    """One rendered section, with where its body came from (for `render --format json`)."""

    name: str
    text: str
    template: str


@dataclass(frozen=True)
class RenderedPrompt:
    """The system prompt, and the sections it was joined from."""

    text: str
    sections: tuple[Section, ...]


class DynamicPromptRenderer:
    """Renders the system prompt; one instance per built agent (so caches never leak
    between sessions). Template overrides are checked and compiled once, here; a
    shipped default is compiled when its section is first rendered (a prompt without
    skills or memory never pays for those templates)."""

    def __init__(
        self,
        overrides: Mapping[str, TemplateOverride] | None = None,
        parameters: Collection[str] = (),
        *,
        keep_compiled: bool = False,
    ) -> None:
        """`parameters`: the names of the agent's parameters, which overrides may use.
        `keep_compiled`: keep compiled templates in the user's cache for later runs
        (an agent that runs does; a dry run writes nothing, see `code_cache`)."""
        self._keep = keep_compiled
        self._templates: dict[str, tuple[Template | None, TemplateOrigin]] = {}
        for section in SECTION_NAMES:
            override = (overrides or {}).get(section)
            if override is not None:
                origin = override_origin(override)
                template = check_override(
                    section, override.text, origin, parameters, keep=keep_compiled
                )
                self._templates[section] = (template, origin)
            else:
                self._templates[section] = (None, TemplateOrigin(f"default {section} template"))
        self._cache: OrderedDict[tuple[Any, ...], RenderedPrompt] = OrderedDict()
        self.cache_hits = 0
        self.cache_misses = 0

    def render(
        self,
        *,
        identity: str,
        context: Mapping[str, Any] | str,
        tools: Sequence[ToolEntry],
        guidelines: Sequence[str] = (),
        workspace: WorkspaceView,
        skills: Sequence[SkillEntry] = (),
        memory: Sequence[MemoryEntry] = (),
        parameters: Mapping[str, Any] | None = None,
    ) -> str:
        """The prompt text. `context` is a mapping, or its canonical JSON when the
        caller already canonicalised it once at build time."""
        return self.render_sections(
            identity=identity,
            context=context,
            tools=tools,
            guidelines=guidelines,
            workspace=workspace,
            skills=skills,
            memory=memory,
            parameters=parameters,
        ).text

    def render_sections(
        self,
        *,
        identity: str,
        context: Mapping[str, Any] | str,
        tools: Sequence[ToolEntry],
        guidelines: Sequence[str] = (),
        workspace: WorkspaceView,
        skills: Sequence[SkillEntry] = (),
        memory: Sequence[MemoryEntry] = (),
        parameters: Mapping[str, Any] | None = None,
    ) -> RenderedPrompt:
        """`parameters`: the values of the agent's parameters, which section templates
        may use (part of the cache key, as everything a template may show)."""
        context_json = context if isinstance(context, str) else canonical_json(context)
        key = (
            identity,
            context_json,
            tuple(tools),
            tuple(guidelines),
            workspace,
            tuple(skills),
            tuple(memory),
            json.dumps(parameters, sort_keys=True, ensure_ascii=False) if parameters else "",
        )
        cached = self._cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            self._cache.move_to_end(key)
            return cached
        if not isinstance(identity, str) or not identity.strip():
            raise RenderError("identity must be a non-empty string")
        rendered = self._render(key, parameters or {})
        self.cache_misses += 1
        self._cache[key] = rendered
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return rendered

    def _render(self, key: tuple[Any, ...], parameters: Mapping[str, Any]) -> RenderedPrompt:
        identity, context_json, tools, guidelines, workspace, skills, memory, _ = key

        def section(name: str, variables: Mapping[str, Any]) -> Section:
            # a section's own variables win over a parameter of the same name (which
            # validation refuses)
            return self._section(name, {**parameters, **variables})

        sections = [
            section("identity", {"identity": identity.strip(), "context_json": context_json}),
            section("tools", {"tools": tools, "guidelines": guidelines})
            if tools
            else Section("tools", NO_TOOLS, "code: no active tools"),
            section(
                "workspace",
                {"workspace": workspace.path, "context_files": workspace.context_files},
            ),
        ]
        if skills:
            sections.append(section("skills", {"skills": skills}))
        if memory:
            sections.append(section("memory", {"memories": memory}))
        text = "\n\n".join(f"## {s.name}\n{s.text}" for s in sections)
        return RenderedPrompt(text, tuple(sections))

    def _section(self, name: str, variables: Mapping[str, Any]) -> Section:
        template, origin = self._templates[name]
        if template is None:
            template = compile_template(default_template_text(name), self._keep)
            self._templates[name] = (template, origin)
        body = render_template(template, variables, origin).rstrip()
        if not body.strip():
            raise TemplateError(f"{origin}: the {name} section rendered empty")
        return Section(name, body, origin.name)


def override_origin(override: TemplateOverride) -> TemplateOrigin:
    """Where an override's text is, for messages: its file, or its manifest line."""
    if override.file is not None:
        return TemplateOrigin.of_file(override.file)
    if override.manifest is not None:
        return TemplateOrigin.inline(override.manifest, override.line, override.section)
    return TemplateOrigin(override.origin)


def sample_variables(section: str, identity: str = "") -> dict[str, Any]:
    """Values of the kind the renderer passes to `section`, for `validate` to render an
    override once: a template that fails or renders empty on them would fail on a
    real agent too, and CI should say so before anyone runs it."""
    samples: dict[str, dict[str, Any]] = {  # pragma: no mutate (any sample of its kind does)
        "identity": {
            "identity": identity.strip() or "You are a careful assistant.",
            "context_json": '{"project":"example"}',
        },
        "tools": {
            "tools": (
                ToolEntry("read", "Read a file", "Read a file's contents."),
                ToolEntry("bash", "", "Run a shell command."),
            ),
            "guidelines": ("Use `read` to look at files.",),
        },
        "workspace": {
            "workspace": "/home/user/project",
            "context_files": (ContextFileView("AGENTS.md", "Run the tests with `make test`."),),
        },
        "skills": {
            "skills": (SkillEntry("fix-workflow", "How bugs are fixed", "skills/fix/SKILL.md"),),
        },
        "memory": {
            "memories": (
                MemoryEntry("deploy-window", "project", "When deploys happen", "Not on Fridays."),
            ),
        },
    }
    return samples[section]


def sample_render(
    section: str, text: str, identity: str = "", parameters: Mapping[str, Any] | None = None
) -> TemplateProblem | None:
    """Render an override once with `sample_variables` (and `parameters`, sample values
    of the agent's parameters): the problem when it fails or renders empty, else None.
    Runs within the render budget, so a template that never finishes is reported rather
    than waited for. `text` passed `template_problems`."""
    variables = {**(parameters or {}), **sample_variables(section, identity)}
    body, problem = try_render(compile_template(text), variables)
    if problem is not None:
        return problem
    if not body.strip():
        return TemplateProblem(1, f"the {section} section renders empty; a section needs text")
    return None


PER_TURN_SECTIONS = ("memory",)
"""Sections whose text may change from one prompt to the next (this turn's memory):
the prompt cache can hold what comes before them, not them."""


def stable_length(prompt: str) -> int | None:
    """How many leading characters of a rendered prompt stay the same from turn to
    turn: everything before its per-turn section (the tail, when there is one); None
    when it has none, so all of it is stable."""
    for name in PER_TURN_SECTIONS:
        index = prompt.rfind(f"\n\n## {name}\n")
        if index >= 0:
            return index
    return None
