"""Section templates: the shipped defaults, the sandbox, and static checks.

Templates only shape a section's body. Which sections exist, their headings and
their order are decided in code (`prompt.renderer`), so an override can reword the
tool catalog but cannot hide the fact that there are no tools.

Templates run in Jinja2's `SandboxedEnvironment` with `StrictUndefined`: a typo
fails instead of rendering as nothing, and `''.__class__.__mro__` is refused. The
same rules are checked statically at validate time (`template_problems`), so a bad
override fails in CI, not in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from assembler.errors import TemplateError, TemplateSecurityError

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

# The variables each section's template receives; the renderer passes exactly these.
SECTION_VARIABLES: Mapping[str, frozenset[str]] = {
    "identity": frozenset({"identity", "context_json"}),
    "tools": frozenset({"tools", "guidelines"}),
    "workspace": frozenset({"workspace", "context_files"}),
    "skills": frozenset({"skills"}),
    "memory": frozenset({"memories"}),
}


@dataclass(frozen=True)
class TemplateProblem:
    """A problem in a template's text; `line` is 1-based within the template.
    `security` marks a reach for Python internals (as opposed to a mere mistake)."""

    line: int
    message: str
    security: bool = False


@cache
def environment() -> SandboxedEnvironment:
    """One sandbox per process; compiled templates are cached by their text."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False
    )


@cache
def default_template_text(section: str) -> str:
    """The shipped template of `section` (package data)."""
    return (
        resources.files("assembler.prompt.sections").joinpath(f"{section}.md.j2").read_text("utf-8")
    )


@cache
def compile_template(text: str) -> Template:
    """Compile once per distinct text; raises `TemplateError` on a syntax error."""
    from jinja2 import TemplateSyntaxError

    try:
        return environment().from_string(text)
    except TemplateSyntaxError as e:
        raise TemplateError(f"template syntax error on line {e.lineno}: {e.message}") from e


def render_template(template: Template, variables: Mapping[str, Any], origin: str) -> str:
    """Render in the sandbox; security and undefined-variable failures name `origin`."""
    from jinja2 import UndefinedError
    from jinja2.exceptions import SecurityError, TemplateRuntimeError

    try:
        return template.render(variables)
    except SecurityError as e:
        raise TemplateSecurityError(f"{origin}: template refused by the sandbox: {e}") from e
    except UndefinedError as e:
        raise TemplateError(f"{origin}: {e}") from e
    except TemplateRuntimeError as e:
        raise TemplateError(f"{origin}: {e}") from e
    except (ArithmeticError, LookupError, TypeError, ValueError, MemoryError) as e:
        # `{{ 1/0 }}`, `{{ range(10**9) }}`: the template's own mistake, not ours
        raise TemplateError(f"{origin}: the template failed: {type(e).__name__}: {e}") from e


def template_problems(section: str, text: str) -> list[TemplateProblem]:
    """Static checks of an override: it parses, uses only the section's variables,
    and reaches for no underscore attribute. Runs no template code."""
    from jinja2 import TemplateSyntaxError, meta

    env = environment()
    try:
        tree = env.parse(text)
    except TemplateSyntaxError as e:
        return [TemplateProblem(e.lineno or 1, f"template syntax error: {e.message}")]
    problems: list[TemplateProblem] = []
    allowed = SECTION_VARIABLES[section]
    for name in sorted(meta.find_undeclared_variables(tree) - allowed):
        line = _first_line_using(tree, name)
        choices = ", ".join(f"`{v}`" for v in sorted(allowed))
        problems.append(
            TemplateProblem(
                line,
                f"template uses `{name}`, which the {section} section does not provide (it has {choices})",
            )
        )
    for line, attribute in _private_attributes(tree):
        problems.append(
            TemplateProblem(
                line,
                f"template reaches for `{attribute}`; the sandbox refuses Python internals",
                security=True,
            )
        )
    return problems


def _first_line_using(tree: Any, name: str) -> int:
    from jinja2 import nodes

    for node in tree.find_all(nodes.Name):
        if node.name == name:
            return int(node.lineno)
    return 1


def _private_attributes(tree: Any) -> Iterator[tuple[int, str]]:
    from jinja2 import nodes

    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        attribute = (
            node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        )
        if isinstance(attribute, str) and attribute.startswith("_"):
            yield int(node.lineno), attribute


def check_override(section: str, text: str, origin: str) -> Template:
    """Compile an override for use, refusing the problems `template_problems` finds."""
    problems = template_problems(section, text)
    if problems:
        # A reach for internals is reported as such even when a plain mistake comes first.
        security = [problem for problem in problems if problem.security]
        first = (security or problems)[0]
        error = TemplateSecurityError if first.security else TemplateError
        raise error(f"{origin}:{first.line}: {first.message}")
    return compile_template(text)
