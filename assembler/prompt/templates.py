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

import os
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import TemplateError, TemplateSecurityError
from assembler.prompt.code_cache import cached_code
from assembler.prompt.sandbox import (
    guarded_code,
    render_within_budget,
    sandbox_class,
    template_from_code,
)
from assembler.python_source import building_syntax_trees

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
    """One sandbox per process (with a render budget, see `prompt.sandbox`); compiled
    templates are cached by their text."""
    from jinja2 import StrictUndefined

    return sandbox_class()(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)


@cache
def default_template_text(section: str) -> str:
    """The shipped template of `section` (package data)."""
    return _sections().joinpath(f"{section}.md.j2").read_text("utf-8")


@cache
def _sections() -> resources.abc.Traversable:
    """The package's templates folder, found once (a few milliseconds a lookup)."""
    return resources.files("assembler.prompt.sections")


@cache
def compile_template(text: str, keep: bool = False) -> Template:
    """Compile once per distinct text, using the code kept between runs, and keeping
    it when `keep` (`code_cache`); raises `TemplateError` on a syntax error."""
    import jinja2

    env = environment()
    try:
        code = cached_code(text, jinja2.__version__, lambda t: guarded_code(env, t), keep=keep)
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"template syntax error on line {e.lineno}: {e.message}") from e
    return template_from_code(env, code)


def render_template(
    template: Template, variables: Mapping[str, Any], origin: str | TemplateOrigin
) -> str:
    """Render in the sandbox, within the render budget. Every failure of the template
    becomes a `TemplateError` (or `TemplateSecurityError`) naming where it is:
    `origin`, and the template line when it is known."""
    where = origin if isinstance(origin, TemplateOrigin) else TemplateOrigin(origin)
    try:
        return render_within_budget(template, variables)
    except Exception as e:
        raise template_failure(e, where) from e


@dataclass(frozen=True)
class TemplateOrigin:
    """Where a template's text comes from, for messages: `name` alone (a default
    template), or a file and the line its text starts on (line 1 of a template file,
    the line of an inline template in the manifest) and the manifest field."""

    name: str
    file: str = ""
    first_line: int = 1
    field: str = ""

    def at(self, line: int) -> str:
        """`file:line` of template line `line` (1-based), or the name when unknown."""
        if not self.file:
            return f"{self.name}:{line}" if line > 0 else self.name
        where = f"{self.file}:{self.first_line + max(line, 1) - 1}"
        return f"{where}: {self.field}" if self.field else where

    def __str__(self) -> str:
        return self.at(1) if self.file else self.name

    @classmethod
    def of_file(cls, path: Path) -> TemplateOrigin:
        return cls(str(path), file=shown_path(path))

    @classmethod
    def inline(cls, manifest: Path, line: int, section: str) -> TemplateOrigin:
        field = f"prompt.{section}.template"
        return cls(f"manifest {field}", shown_path(manifest), max(line, 1), field)


def shown_path(path: Path) -> str:
    """A path as a user reads it in a message: relative to the current directory when
    inside it (as editors link best), else as given."""
    try:
        absolute = path.absolute()
        return os.path.relpath(absolute) if absolute.is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)


def template_failure(error: BaseException, origin: TemplateOrigin) -> TemplateError:
    """The `TemplateError` for an exception raised while rendering (see `render_template`)."""
    problem = failure_problem(error)
    kind = TemplateSecurityError if problem.security else TemplateError
    return kind(f"{origin.at(problem.line)}: {problem.message}")


def try_render(
    template: Template, variables: Mapping[str, Any]
) -> tuple[str, TemplateProblem | None]:
    """Render within the budget; the text, or the problem that stopped it."""
    try:
        return render_within_budget(template, variables), None
    except Exception as e:
        return "", failure_problem(e)


def failure_problem(error: BaseException) -> TemplateProblem:
    """What went wrong while rendering, on which template line (0 when unknown)."""
    from jinja2 import UndefinedError
    from jinja2.exceptions import SecurityError, TemplateRuntimeError

    line = _template_line(error)
    if isinstance(error, SecurityError):
        return TemplateProblem(line, f"template refused by the sandbox: {error}", security=True)
    if isinstance(error, TemplateError | UndefinedError | TemplateRuntimeError):
        return TemplateProblem(line, str(error))  # the render budget, a typo, `raise`
    if isinstance(error, RecursionError):
        return TemplateProblem(line, "the template recursed too deeply (a macro calling itself?)")
    # `{{ 1/0 }}`, `{{ x.y }}` on a string: the template's own mistake, not ours
    return TemplateProblem(line, f"the template failed: {type(error).__name__}: {error}")


def _template_line(error: BaseException) -> int:
    """The template line being rendered when `error` was raised: Jinja2 rewrites the
    traceback so that template frames carry the template's own line numbers."""
    import traceback

    line = 0
    for frame, number in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == "<template>":
            line = number
    return line


def template_problems(
    section: str, text: str, parameters: Collection[str] = ()
) -> list[TemplateProblem]:
    """Static checks of an override: it parses, uses only the section's variables (and
    the agent's `parameters`), and reaches for no underscore attribute. Runs no
    template code."""
    choices = ", ".join(f"`{v}`" for v in sorted(SECTION_VARIABLES[section]))
    declared = ", ".join(f"`{p}`" for p in sorted(parameters))
    also = f"; and the parameters {declared}" if declared else ""

    def unknown(name: str) -> str:
        return (
            f"template uses `{name}`, which the {section} section does not provide "
            f"(it has {choices}{also})"
        )

    return variable_problems(text, SECTION_VARIABLES[section] | frozenset(parameters), unknown)


def used_variables(text: str) -> dict[str, int]:
    """The variables a template names (`{{ issue_url }}`), each with the first line
    using it; found by parsing (jinja2.meta), never by rendering. Empty when the text
    does not parse (the syntax error is reported where the template is checked)."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        with building_syntax_trees():
            tree = environment().parse(text)
    except TemplateSyntaxError:
        return {}
    return {
        name: _first_line_using(tree, name) for name in sorted(meta.find_undeclared_variables(tree))
    }


def variable_problems(
    text: str, allowed: Collection[str], unknown: Callable[[str], str]
) -> list[TemplateProblem]:
    """Static checks of any template: it parses, names only `allowed` variables
    (`unknown(name)` words the problem), and reaches for no underscore attribute."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        with building_syntax_trees():
            tree = environment().parse(text)
    except TemplateSyntaxError as e:
        return [TemplateProblem(e.lineno or 1, f"template syntax error: {e.message}")]
    problems = [
        TemplateProblem(_first_line_using(tree, name), unknown(name))
        for name in sorted(meta.find_undeclared_variables(tree) - set(allowed))
    ]
    problems.extend(
        TemplateProblem(
            line,
            f"template reaches for `{attribute}`; the sandbox refuses Python internals",
            security=True,
        )
        for line, attribute in _private_attributes(tree)
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


def check_override(
    section: str,
    text: str,
    origin: str | TemplateOrigin,
    parameters: Collection[str] = (),
    *,
    keep: bool = False,
) -> Template:
    """Compile an override for use, refusing the problems `template_problems` finds."""
    where = origin if isinstance(origin, TemplateOrigin) else TemplateOrigin(origin)
    problems = template_problems(section, text, parameters)
    if problems:
        # A reach for internals is reported as such even when a plain mistake comes first.
        security = [problem for problem in problems if problem.security]
        first = (security or problems)[0]
        error = TemplateSecurityError if first.security else TemplateError
        raise error(f"{where.at(first.line)}: {first.message}")
    return compile_template(text, keep)
