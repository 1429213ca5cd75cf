"""The Jinja2 sandbox templates render in, with a budget on what one render may cost.

Jinja2's `SandboxedEnvironment` keeps a template away from Python internals, but not
from spending: two nested `range(100000)` loops never finish, a macro that calls
itself twice per level doubles its work per level, `"x" * 10**9` asks for a
gigabyte. A template override comes from the repository, so a hostile one must not
hang `validate` or `render`. Every render therefore gets a budget:

- **steps**: loop iterations, calls (macros, methods, `range`), filter calls and the
  operators that can build large values (`*`, `**`, `%`) together, at most
  `MAX_STEPS`; a loop's iterable is wrapped when the template is compiled, so a loop
  that outputs nothing still counts;
- **time**: at most `MAX_SECONDS` of wall-clock time, checked as steps are counted;
- **size**: the section's text at most `MAX_OUTPUT_CHARS` plus `OUTPUT_PER_INPUT_CHAR`
  characters per character of text the section is given (`output_allowance`): a
  catalog of 10,000 skills is over a million characters, so a fixed limit would stop a
  big agent's own default template (issue 21), while a template that multiplies its
  input is still stopped; a repetition (`*`), a power, a `%` format or a filter or
  method argument that would build something larger is refused before it is built;
  a string or list built by a filter, a call, an operator (`+` too), a `~` or a
  `{% set %}` block that is larger still is refused as soon as it exists, so a loop
  that doubles a string each time stops at the limit instead of after a gigabyte;
- **numbers**: a power or a product of integers of more than `MAX_NUMBER_BITS` bits
  is refused before it is computed (a loop that squares a number doubles its digits
  per step, and one such multiplication can outlast the whole time budget).

Running out raises `TemplateError` naming the limit; the renderer adds the template
and line. The budget is generous for any real prompt: a catalog of 1,000 tools costs
a few thousand steps.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from types import CodeType
from typing import TYPE_CHECKING, Any

from assembler.errors import TemplateError
from assembler.python_source import building_syntax_trees

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.runtime import Context
    from jinja2.sandbox import SandboxedEnvironment

MAX_STEPS = 1_000_000
MAX_SECONDS = 2.0
MAX_OUTPUT_CHARS = 1_000_000
OUTPUT_PER_INPUT_CHAR = 4
MAX_NUMBER_BITS = 100_000
_CLOCK_EVERY = 1024  # steps between two looks at the clock

#: The global a compiled loop calls to count its iterations (not a section variable:
#: no template is told about it, and using it only counts more).
LOOP_GUARD = "assembler_loop_guard"
#: The global a compiled `~` passes its result through, and the filter a compiled
#: `{% set %}` block does: a call and a filter, whose results are checked for size.
SIZE_GUARD = "assembler_size_guard"

_LARGE_WIDTH = re.compile(r"\d{7,}")


class RenderBudget:
    """The steps and time one render has left, and the size its output may reach."""

    def __init__(
        self, steps: int | None = None, seconds: float | None = None, max_chars: int | None = None
    ) -> None:
        steps = MAX_STEPS if steps is None else steps
        seconds = MAX_SECONDS if seconds is None else seconds
        self.max_chars = MAX_OUTPUT_CHARS if max_chars is None else max_chars
        self.steps_left = steps
        self.steps = steps
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def tick(self) -> None:
        self.steps_left -= 1
        if self.steps_left < 0:
            raise TemplateError(
                f"the template exceeded its render budget of {self.steps:,} loop iterations "
                "and calls (a loop or macro recursion that never ends?)"
            )
        if self.steps_left % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
            raise TemplateError(f"the template exceeded its render budget of {self.seconds:g} s")


_BUDGET: ContextVar[RenderBudget | None] = ContextVar("assembler_render_budget", default=None)


def _tick() -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.tick()


def _max_chars() -> int:
    budget = _BUDGET.get()
    return MAX_OUTPUT_CHARS if budget is None else budget.max_chars


def output_allowance(variables: Any) -> int:
    """How long a section rendered from `variables` may be: `MAX_OUTPUT_CHARS`, plus
    `OUTPUT_PER_INPUT_CHAR` per character of the text in them."""
    return MAX_OUTPUT_CHARS + OUTPUT_PER_INPUT_CHAR * text_size(variables)


def text_size(value: Any, depth: int = 0) -> int:
    """Characters of text in `value`: strings, in mappings, sequences and the fields
    of plain objects (the renderer's views), a few levels deep."""
    if isinstance(value, str):
        return len(value)
    if depth > 6:
        return 0
    if isinstance(value, Mapping):
        return sum(text_size(k, depth + 1) + text_size(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(text_size(item, depth + 1) for item in value)
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return sum(text_size(item, depth + 1) for item in fields.values())
    return 0


def _too_large(what: str, size: int) -> TemplateError:
    return TemplateError(
        f"the template would build {what} of {size:,} items; a section may hold at most "
        f"{_max_chars():,} characters"
    )


def _check_arguments(args: Iterable[Any]) -> None:
    """An integer argument larger than a section may be (a width, a count) is refused:
    `center(10**9)` would allocate before any output check could run."""
    for value in args:
        if isinstance(value, int) and not isinstance(value, bool) and value > _max_chars():
            raise _too_large("a value", value)


def _check_bits(bits: int) -> None:
    """An integer result of about `bits` bits is refused past `MAX_NUMBER_BITS`: one
    multiplication of two huge numbers can take minutes, between two steps."""
    if bits > MAX_NUMBER_BITS:
        raise TemplateError(f"the template would compute a number of about {bits:,} bits; refusing")


def _loop_guard(iterable: Any) -> Iterator[Any]:
    for item in iterable:
        _tick()
        yield item


def _guard_filter(function: Callable[..., Any]) -> Callable[..., Any]:
    # The value filtered comes first, after the context or environment for filters
    # that take one (`jinja_pass_arg`); the arguments after it are checked.
    first = 2 if getattr(function, "jinja_pass_arg", None) is not None else 1

    @functools.wraps(function)  # keeps `jinja_pass_arg`, so Jinja still passes it
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _tick()
        _check_arguments(args[first:])
        _check_arguments(kwargs.values())
        return _check_result(function(*args, **kwargs))

    return guarded


def _sized(value: Any) -> bool:
    return isinstance(value, str | list | tuple)


def _check_result(value: Any) -> Any:
    """`value`, unless it is a string or list longer than a section may be: built once,
    it is refused before anything can build on it (doubling it again, say)."""
    if _sized(value) and len(value) > _max_chars():
        raise _too_large("a value", len(value))
    return value


def _size_guard(value: Any) -> Any:
    """What `SIZE_GUARD` names: the value itself, checked as every call result is."""
    return value


def sandbox_class() -> type[SandboxedEnvironment]:
    """The budgeted sandbox; a function so that importing this module stays free of
    Jinja2 (a manifest without templates to render never pays for it)."""
    from jinja2.sandbox import SandboxedEnvironment

    class BudgetedSandbox(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%", "+"})

        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            filters = {**self.filters, SIZE_GUARD: _size_guard}
            self.filters = {name: _guard_filter(f) for name, f in filters.items()}
            self.globals[LOOP_GUARD] = _loop_guard
            self.globals[SIZE_GUARD] = _size_guard

        def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            _tick()
            _check_arguments(args)
            _check_arguments(kwargs.values())
            return _check_result(super().call(context, obj, *args, **kwargs))

        def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
            _tick()
            if operator == "*":
                for items, count in ((left, right), (right, left)):
                    size = len(items) * count if _sized(items) and isinstance(count, int) else 0
                    if size > _max_chars():
                        raise _too_large("a repetition", size)
                if isinstance(left, int) and isinstance(right, int):
                    # squaring in a loop doubles the digits each time: a few dozen
                    # steps would take hours, far from any step or clock check
                    _check_bits(left.bit_length() + right.bit_length())
            elif operator == "**" and isinstance(left, int) and isinstance(right, int):
                if right > 0 and abs(left) > 1:
                    _check_bits(left.bit_length() * right)
            elif operator == "%" and isinstance(left, str) and _LARGE_WIDTH.search(left):
                raise TemplateError("the template formats with a width too large for a prompt")
            return _check_result(super().call_binop(context, operator, left, right))

    return BudgetedSandbox


def guarded_code(environment: SandboxedEnvironment, text: str) -> CodeType:
    """The Python code of `text` with every `for` loop's iterable passed through the
    loop guard, so each iteration is counted against the render budget, and the text
    of every `~` and `{% set %}` block through the size guard (a call and a filter,
    whose results are checked), so neither can double a string past the limit."""
    from jinja2 import nodes
    from jinja2.visitor import NodeTransformer

    class _GuardConcat(NodeTransformer):
        def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
            self.generic_visit(node)
            guard = nodes.Name(SIZE_GUARD, "load", lineno=node.lineno)
            return nodes.Call(guard, [node], [], None, None, lineno=node.lineno)

    with building_syntax_trees():
        tree = environment.parse(text)
    for loop in tree.find_all(nodes.For):
        line = loop.iter.lineno
        guard = nodes.Name(LOOP_GUARD, "load", lineno=line)
        loop.iter = nodes.Call(guard, [loop.iter], [], None, None, lineno=line)
    for block in tree.find_all(nodes.AssignBlock):
        block.filter = nodes.Filter(
            block.filter, SIZE_GUARD, [], [], None, None, lineno=block.lineno
        )
    tree = _GuardConcat().visit(tree)
    tree.set_environment(environment)
    code = environment.compile(tree)
    assert isinstance(code, CodeType)
    return code


def template_from_code(environment: SandboxedEnvironment, code: CodeType) -> Template:
    """A template of `environment` from code `guarded_code` made (as `from_string`)."""
    return environment.template_class.from_code(environment, code, environment.make_globals(None))


def render_within_budget(template: Template, variables: Any) -> str:
    """Render with a fresh budget, its size allowance from `variables`; the output is
    checked as it is produced."""
    budget = RenderBudget(max_chars=output_allowance(variables))
    token = _BUDGET.set(budget)
    try:
        size = 0
        chunks: list[str] = []
        for chunk in template.generate(variables):
            size += len(chunk)
            if size > budget.max_chars:
                raise TemplateError(
                    f"the template's output exceeded {MAX_OUTPUT_CHARS:,} characters plus "
                    f"{OUTPUT_PER_INPUT_CHAR} per character of the text the section is given "
                    f"({budget.max_chars:,} in all); a section's template may not multiply "
                    "its input more than that"
                )
            chunks.append(chunk)
        return "".join(chunks)
    finally:
        _BUDGET.reset(token)
