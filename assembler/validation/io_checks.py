"""`parameters`, `task` and `output` checked together, before anything runs.

Each is a contract with the others: the task and the section templates may only name
declared parameters (found by parsing the templates, never by rendering them), a
declared parameter nothing uses is a warning, a default must match its own schema,
and every schema must be a valid JSON Schema whose references resolve inside it. A
parent's `agent:` entry that fixes some of a sub-agent's parameters (`params:`) is
checked against that sub-agent's declarations. Every problem is reported at its own
file:line:col; nothing is imported, started or connected.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from assembler.errors import Issue
from assembler.manifest.model import Manifest
from assembler.manifest.schema_file import read_schema_file, schema_file_reference
from assembler.manifest.yaml_source import JsonPath, SourceMap
from assembler.python_source import building_syntax_trees
from assembler.text import json_type_name
from assembler.validation.context import CheckContext, display, fmt, mapping
from assembler.validation.tool_checks import active_tool_names

OUTPUT_TOOL = "final_answer"  # as `typed.output.OUTPUT_TOOL` (that module compiles schemas)


def declared_parameters(data: Mapping[str, Any]) -> dict[str, Any]:
    """The raw document's `parameters` (name -> schema), as far as they are readable."""
    return {
        name: spec
        for name, spec in mapping(data.get("parameters")).items()
        if isinstance(name, str)
    }


def check_parameters(ctx: CheckContext) -> Iterator[Issue]:
    """Each parameter: a name a template can use, a valid schema, a default that
    matches it; and (with a `task`) used somewhere."""
    for name in mapping(ctx.data.get("parameters")):
        if not isinstance(name, str):
            shown = "null" if name is None else str(name).lower()
            yield ctx.source.issue(
                ("parameters", name),
                f"a parameter name must be text: YAML read `{shown}` as {json_type_name(name)}; "
                "quote it, or choose another name",
                key=True,
            )
    parameters = declared_parameters(ctx.data)
    if not parameters:
        return
    from assembler.prompt.templates import SECTION_VARIABLES
    from assembler.typed.schemas import compile_schema, schema_problems, value_errors

    section_names = {name for names in SECTION_VARIABLES.values() for name in names}
    for name, spec in parameters.items():
        at: JsonPath = ("parameters", name)
        if not template_name(name):
            yield ctx.source.issue(
                at,
                f"a parameter cannot be named `{name}`: in a template it is a Jinja2 keyword, "
                "constant or built-in name, not a variable of its own; choose another name",
                key=True,
            )
        elif name in section_names:
            yield ctx.source.issue(
                at,
                f"a parameter cannot be named `{name}`: a section template already has a "
                "variable of that name",
                key=True,
            )
        if not isinstance(spec, dict):
            continue
        problems = schema_problems(spec)
        for problem in problems:
            yield ctx.issue((*at, *problem.path), f"invalid parameter schema: {problem.message}")
        if not problems and "default" in spec:
            errors = value_errors(compile_schema(spec), spec["default"], prefix="")
            for error in errors:
                yield ctx.issue(
                    (*at, "default"), f"the default does not match its own schema: {error}"
                )
    yield from _unused(ctx, parameters)


#: Words of Jinja2's expressions: the parser reads `{{ and }}` as a variable, but in
#: `{{ x and y }}`, `{{ a if b else c }}` or `{{ x is defined }}` they are operators.
EXPRESSION_WORDS = frozenset({"and", "or", "not", "in", "is", "if", "else"})
#: Names a template sees without being given them: inside loops, macros and calls.
SPECIAL_NAMES = frozenset({"loop", "caller", "varargs", "kwargs", "self", "super"})


def template_name(name: str) -> bool:
    """Whether templates can use `name` as a variable of their own: Jinja2's parser
    reads `{{ name }}` as a free variable (not `true`, `none`, `range`), and it is
    neither an operator word nor a name Jinja2 gives templates itself (`loop`)."""
    from jinja2 import TemplateSyntaxError, meta, nodes

    from assembler.prompt.templates import environment

    if name in EXPRESSION_WORDS or name in SPECIAL_NAMES:
        return False
    env = environment()
    if name in env.globals:
        return False
    try:
        with building_syntax_trees():  # Jinja2's lexer parses Python: see python_source
            tree = env.parse(f"{{{{ {name} }}}}")
    except TemplateSyntaxError:
        return False
    output = tree.body[0] if tree.body else None
    node = output.nodes[0] if isinstance(output, nodes.Output) and output.nodes else None
    return (
        isinstance(node, nodes.Name)
        and node.name == name
        and name in meta.find_undeclared_variables(tree)
    )


def _unused(ctx: CheckContext, parameters: Mapping[str, Any]) -> Iterator[Issue]:
    """With a `task`, a parameter no template names is a warning: nothing shows it."""
    task = ctx.data.get("task")
    if not isinstance(task, str):
        return  # without a task, a sub-agent's message is its parameters as JSON
    from assembler.prompt.templates import used_variables

    used = set(used_variables(task))
    for text in _override_texts(ctx):
        used |= set(used_variables(text))
    for name in parameters:
        if name not in used:
            yield ctx.source.issue(
                ("parameters", name),
                f"parameter `{name}` is declared but neither the task nor a section template "
                "uses it",
                severity="warning",
                key=True,
            )


def _override_texts(ctx: CheckContext) -> Iterator[str]:
    from assembler.manifest.loader import read_template_file

    for spec in mapping(ctx.data.get("prompt")).values():
        if not isinstance(spec, dict):
            continue
        if isinstance(spec.get("template"), str):
            yield spec["template"]
        elif isinstance(spec.get("file"), str):
            text, _ = read_template_file(ctx.resolve(spec["file"]), (ctx.base, ctx.workspace()))
            if text is not None:
                yield text


def check_task(ctx: CheckContext) -> Iterator[Issue]:
    """The task template parses, names only declared parameters, and reaches for no
    Python internals; each problem at its line in the manifest."""
    task = ctx.data.get("task")
    if not isinstance(task, str):
        return
    from assembler.prompt.task import task_problems

    at: JsonPath = ("task",)
    for problem in task_problems(task, list(declared_parameters(ctx.data))):
        mark = ctx.source.text_position(at, max(problem.line, 1), 1)
        yield Issue(ctx.source.file, mark.line, mark.column, "error", problem.message, fmt(at))


def check_output(ctx: CheckContext) -> Iterator[Issue]:
    """`output.schema` is a valid JSON Schema whose references resolve inside it; a
    `{$ref: FILE}` names a readable schema file of the project; no tool is named like
    the tool the answer is given with."""
    output = mapping(ctx.data.get("output"))
    schema = output.get("schema")
    if not isinstance(schema, dict):
        return
    at: JsonPath = ("output", "schema")
    source: SourceMap = ctx.source
    written = schema_file_reference(schema)
    if written is not None:
        file = ctx.resolve(written)
        read = read_schema_file(file, (ctx.base, ctx.workspace()), display(file))
        if read.document is None:
            yield from read.issues
            yield ctx.issue((*at, "$ref"), f"schema file {written} {read.problem}")
            return
        schema, source, at = read.document.data, read.document.source, ()
    from assembler.typed.schemas import schema_problems

    for problem in schema_problems(schema):
        yield source.issue((*at, *problem.path), f"invalid output schema: {problem.message}")
    names, _ = active_tool_names(ctx.data, ctx.subagent_tools)
    if OUTPUT_TOOL in names:
        yield ctx.issue(
            ("output",),
            f"a tool is named `{OUTPUT_TOOL}`, the tool an agent with `output:` answers with; "
            "rename the tool",
        )


def check_subagent_params(
    ctx: CheckContext, index: int, entry: Mapping[str, Any], child: Manifest
) -> Iterator[Issue]:
    """A parent's `agent:` entry with `params:` against the sub-agent's parameters:
    each name declared there, each value matching its schema."""
    fixed = mapping(entry.get("params"))
    if not fixed:
        return
    from assembler.typed.schemas import compile_schema, schema_problems, value_errors

    at: JsonPath = ("tools", "sets", index, "params")
    declared = {spec.name: spec for spec in child.parameters}
    known = ", ".join(f"`{name}`" for name in declared) or "none"
    for name, value in fixed.items():
        spec = declared.get(name)
        if spec is None:
            yield ctx.source.issue(
                (*at, name),
                f"sub-agent {entry.get('agent')} has no parameter `{name}` (its parameters: "
                f"{known})",
                key=True,
            )
        elif not schema_problems(spec.schema):  # a broken schema is the child's own error
            for error in value_errors(compile_schema(spec.schema), value, prefix=name):
                yield ctx.issue((*at, name), f"does not match the sub-agent's parameter: {error}")
