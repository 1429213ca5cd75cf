"""The manifest's `task`: the first user message, a template over the parameters.

It renders in the same sandbox and budget as the section templates, with the
parameters' values (defaults filled in) as its only variables. `validate` checks it
statically (`template_problems`-like: it parses, it names only declared parameters,
it reaches for no internals); `render --dry-run --param` and a run render it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from assembler.errors import TemplateError, TemplateSecurityError
from assembler.manifest.model import TaskTemplate
from assembler.prompt.templates import (
    TemplateOrigin,
    TemplateProblem,
    compile_template,
    render_template,
    shown_path,
    variable_problems,
)


def task_origin(task: TaskTemplate) -> TemplateOrigin:
    """Where the task's text is, for messages (`agent.yaml:12: task`)."""
    if task.manifest is None:
        return TemplateOrigin("manifest task")
    return TemplateOrigin("manifest task", shown_path(task.manifest), max(task.line, 1), "task")


def task_problems(text: str, parameters: Collection[str]) -> list[TemplateProblem]:
    """What is wrong with a task template, statically: a syntax error, a variable that
    is not a declared parameter, a reach for Python internals. Renders nothing."""
    declared = ", ".join(f"`{name}`" for name in parameters) or "none are declared"

    def unknown(name: str) -> str:
        return (
            f"the task uses `{name}`, which is not a parameter (parameters: {declared}); "
            "declare it under `parameters`"
        )

    return variable_problems(text, parameters, unknown)


def render_task(task: TaskTemplate, values: Mapping[str, Any]) -> str:
    """The first user message, from the bound parameter values. A template problem is
    a `TemplateError` naming the task's line."""
    origin = task_origin(task)
    problems = task_problems(task.text, list(values))
    if problems:
        security = [problem for problem in problems if problem.security]
        first = (security or problems)[0]
        kind = TemplateSecurityError if first.security else TemplateError
        raise kind(f"{origin.at(first.line)}: {first.message}")
    text = render_template(compile_template(task.text), values, origin)
    if not text.strip():
        raise TemplateError(f"{origin}: the task rendered empty; a first message needs text")
    return text
