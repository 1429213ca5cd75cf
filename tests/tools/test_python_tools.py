"""Python functions as tools: schemas, calls, failures, and the import-free dry run.

Every test writes a real module into `tmp_path` under a fresh name, so no test sees a
module another one imported.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assembler.errors import ToolError
from assembler.manifest.model import PythonToolSpec
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.python.docstrings import parse_docstring
from assembler.tools.python.tools import (
    load_python_tool,
    static_python_tool,
    tool_from_function,
)

_counter = itertools.count()

HEADER = """
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict, Union

from assembler.tools.base import ToolContext, ToolResult


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Shape(enum.Enum):
    SQUARE = (1, 1)
    LINE = (1, 0)


class Options(TypedDict):
    name: str
    verbose: NotRequired[bool]


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0
    tags: list[str] = dataclasses.field(default_factory=list)
"""


class Project:
    """Writes modules into a directory and loads tools from them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: list[str] = []

    def module(self, source: str, *, header: bool = True) -> str:
        name = f"pytool_mod_{next(_counter)}"
        text = (HEADER if header else "") + textwrap.dedent(source)
        (self.root / f"{name}.py").write_text(text, encoding="utf-8")
        self.modules.append(name)
        return name

    def spec(self, module: str, function: str, **fields: Any) -> PythonToolSpec:
        return PythonToolSpec(f"{module}:{function}", **fields)

    def load(self, module: str, function: str, **fields: Any) -> Tool:
        return load_python_tool(self.spec(module, function, **fields), [self.root])

    def tool(self, source: str, function: str = "f", **fields: Any) -> Tool:
        return self.load(self.module(source), function, **fields)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "project"
    root.mkdir()
    made = Project(root)
    yield made
    for name in made.modules:
        sys.modules.pop(name, None)


def call(tool: Tool, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    context = ctx or ToolContext(workspace=Path.cwd())
    return asyncio.run(tool.execute(args, context))


def prop(tool: Tool, name: str = "x") -> Any:
    return tool.parameters["properties"][name]


# --- schema derivation -------------------------------------------------------------

STATIC_TYPES: list[tuple[str, dict[str, Any]]] = [
    ("str", {"type": "string"}),
    ("int", {"type": "integer"}),
    ("float", {"type": "number"}),
    ("bool", {"type": "boolean"}),
    ("None", {"type": "null"}),
    ("Any", {}),
    ("Optional[str]", {"type": ["string", "null"]}),
    ("str | None", {"type": ["string", "null"]}),
    ("Union[int, str, None]", {"type": ["integer", "string", "null"]}),
    ("list[int]", {"type": "array", "items": {"type": "integer"}}),
    ("list", {"type": "array"}),
    ("Sequence[str]", {"type": "array", "items": {"type": "string"}}),
    ("tuple[int, ...]", {"type": "array", "items": {"type": "integer"}}),
    (
        "tuple[int, str]",
        {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    ("set[str]", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    ("dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("Mapping[str, Any]", {"type": "object"}),
    ("dict", {"type": "object"}),
    ('Literal["a", "b"]', {"type": "string", "enum": ["a", "b"]}),
    ("Literal[1, 'a']", {"enum": [1, "a"]}),
    (
        'Literal["a"] | None',
        {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
    ),
    (
        'Annotated[int, "How many to fetch."]',
        {"type": "integer", "description": "How many to fetch."},
    ),
    (
        'Optional[list[Annotated[str, "A tag."]]]',
        {
            "anyOf": [
                {"type": "array", "items": {"type": "string", "description": "A tag."}},
                {"type": "null"},
            ]
        },
    ),
    (
        "dict[str, list[float]]",
        {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "number"}},
        },
    ),
]

RUNTIME_TYPES: list[tuple[str, dict[str, Any]]] = [
    ("Color", {"type": "string", "enum": ["red", "green"]}),
    ("Level", {"type": "integer", "enum": [1, 2]}),
    ("Shape", {"type": "string", "enum": ["SQUARE", "LINE"]}),
    (
        "Options",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "verbose": {"type": "boolean"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
    (
        "Point",
        {
            "type": "object",
            "properties": {
                "x": {"type": "integer"},
                "y": {"type": "number", "default": 0.0},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["x"],
            "additionalProperties": False,
        },
    ),
    ("Color | None", {"anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}]}),
]


@pytest.mark.parametrize(("annotation", "expected"), STATIC_TYPES)
def test_schema_for_statically_known_types(
    project: Project, annotation: str, expected: dict[str, Any]
) -> None:
    module = project.module(f"def f(x: {annotation}) -> None:\n    pass\n")
    tool = project.load(module, "f")
    assert prop(tool) == expected
    static = static_python_tool(project.spec(module, "f"), [project.root])
    assert static.problems == ()
    assert static.parameters == tool.parameters


@pytest.mark.parametrize(("annotation", "expected"), RUNTIME_TYPES)
def test_schema_for_types_known_only_at_run_time(
    project: Project, annotation: str, expected: dict[str, Any]
) -> None:
    module = project.module(f"def f(x: {annotation}) -> None:\n    pass\n")
    assert prop(project.load(module, "f")) == expected
    static = static_python_tool(project.spec(module, "f"), [project.root])
    assert static.parameters["properties"]["x"] == {}
    assert any(
        "parameter `x`: type" in p and "only known at run time" in p for p in static.problems
    )


def test_whole_schema_shape_required_and_defaults(project: Project) -> None:
    tool = project.tool(
        """
        def f(a: int, b, /, c: str = "x", *, d: tuple[int, int] = (1, 2), e: object = object(),
              g: float | None = None, h: Color = Color.GREEN) -> str:
            return ""
        """
    )
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {},
            "c": {"type": "string", "default": "x"},
            "d": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                "minItems": 2,
                "maxItems": 2,
                "default": [1, 2],
            },
            "e": {},
            "g": {"type": ["number", "null"], "default": None},
            "h": {"type": "string", "enum": ["red", "green"], "default": "green"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_unresolvable_types_are_refused_with_the_reference(project: Project) -> None:
    module = project.module("import pathlib\n\ndef f(p: pathlib.Path) -> None:\n    pass\n")
    with pytest.raises(ToolError, match=rf"`{module}:f`.*parameter `p`.*`Path`"):
        project.load(module, "f")
    module = project.module("def f(p: dict[int, str]) -> None:\n    pass\n")
    with pytest.raises(ToolError, match="keys are strings"):
        project.load(module, "f")


# --- docstrings --------------------------------------------------------------------

GOOGLE = '''
def f(amount: float, currency: str = "EUR") -> str:
    """Quote the fee for a transfer.

    The fee depends on the currency.

    Args:
        amount (float): Amount to send,
            in major units.
        currency: ISO 4217 code.

    Returns:
        The fee, as text.
    """
    return ""
'''

REST = '''
def f(amount: float, currency: str = "EUR") -> str:
    """Quote the fee for a transfer.

    The fee depends on the currency.

    :param float amount: Amount to send,
        in major units.
    :param currency: ISO 4217 code.
    :returns: The fee, as text.
    """
    return ""
'''

NUMPY = '''
def f(amount: float, currency: str = "EUR") -> str:
    """Quote the fee for a transfer.

    The fee depends on the currency.

    Parameters
    ----------
    amount : float
        Amount to send,
        in major units.
    currency : str, optional
        ISO 4217 code.

    Returns
    -------
    str
        The fee, as text.
    """
    return ""
'''


@pytest.mark.parametrize("source", [GOOGLE, REST, NUMPY], ids=["google", "rest", "numpy"])
def test_docstring_styles(project: Project, source: str) -> None:
    tool = project.tool(source)
    assert tool.description == "Quote the fee for a transfer.\n\nThe fee depends on the currency."
    assert tool.snippet == "Quote the fee for a transfer."
    assert prop(tool, "amount") == {
        "type": "number",
        "description": "Amount to send, in major units.",
    }
    assert prop(tool, "currency") == {
        "type": "string",
        "description": "ISO 4217 code.",
        "default": "EUR",
    }


def test_docstring_without_sections_and_without_docstring(project: Project) -> None:
    module = project.module(
        '''
        def described():
            """Say hello.

            Then say it again.
            """

        def bare(x: int) -> int:
            return x
        '''
    )
    tool = project.load(module, "described")
    assert (tool.description, tool.snippet) == ("Say hello.\n\nThen say it again.", "Say hello.")
    bare = project.load(module, "bare")
    assert bare.description == f"Call {module}:bare"
    assert bare.snippet == f"Call {module}:bare"
    assert bare.name == "bare"
    assert bare.source == f"python:{module}:bare"
    assert bare.guidelines == ()


def test_parse_docstring_keeps_prose_before_the_first_section() -> None:
    doc = parse_docstring("Summary.\n\nKeyword Args:\n    limit: At most this many.\n")
    assert doc.description == "Summary."
    assert dict(doc.params) == {"limit": "At most this many."}
    assert parse_docstring(None).description == ""
    raises_only = parse_docstring("Do it.\n\nRaises:\n    ValueError: when not.")
    assert (raises_only.description, dict(raises_only.params)) == ("Do it.", {})


def test_annotated_description_wins_over_the_docstring(project: Project) -> None:
    tool = project.tool(
        '''
        def f(x: Annotated[int, "From the annotation."]) -> None:
            """Do it.

            Args:
                x: From the docstring.
            """
        '''
    )
    assert prop(tool) == {"type": "integer", "description": "From the annotation."}


# --- the manifest's words win --------------------------------------------------------


def test_manifest_overrides_name_description_snippet_and_parameters(project: Project) -> None:
    declared = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
        "required": ["n"],
    }
    module = project.module(
        '''
        def f(n, ctx: ToolContext):
            """Original."""
            return n * 2
        '''
    )
    tool = project.load(
        module,
        "f",
        name="double",
        description="Double a number.\nReally.",
        parameters=declared,
    )
    assert (tool.name, tool.description, tool.snippet) == (
        "double",
        "Double a number.\nReally.",
        "Double a number.",
    )
    assert tool.parameters == declared
    assert call(tool, n=4).content == "8"
    assert call(tool, n=0).is_error
    static = static_python_tool(
        project.spec(module, "f", name="double", snippet="x2", parameters=declared),
        [project.root],
    )
    assert (static.name, static.snippet, static.parameters, static.problems) == (
        "double",
        "x2",
        declared,
        (),
    )


def test_declared_parameters_must_fit_the_signature(project: Project) -> None:
    module = project.module("def f(a: int, b: int = 0) -> int:\n    return a\n")
    wrong = {"type": "object", "properties": {"a": {}, "c": {}}}
    with pytest.raises(ToolError, match="declared parameter `c`"):
        project.load(module, "f", parameters=wrong)
    with pytest.raises(ToolError, match="argument `a` has no default"):
        project.load(module, "f", parameters={"type": "object", "properties": {"b": {}}})
    with pytest.raises(ToolError, match="not a valid JSON schema"):
        project.load(module, "f", parameters={"type": "object", "properties": {"a": 3}})


def test_kwargs_are_accepted_with_declared_parameters(project: Project) -> None:
    tool = project.tool(
        "def f(**options: Any) -> dict:\n    return options\n",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    assert call(tool, q="hi").content == '{\n  "q": "hi"\n}'


# --- calling -------------------------------------------------------------------------


def test_tool_context_is_injected_not_described(project: Project) -> None:
    module = project.module(
        """
        def f(path: str, ctx: ToolContext) -> str:
            return f"{ctx.workspace}/{path} {ctx.max_output_lines}"

        def g(ctx: ToolContext | None = None) -> str:
            return "none" if ctx is None else "some"
        """
    )
    tool = project.load(module, "f")
    assert list(tool.parameters["properties"]) == ["path"]
    assert tool.parameters["required"] == ["path"]
    ctx = ToolContext(workspace=Path("/ws"), max_output_lines=7)
    assert call(tool, ctx, path="a.txt").content == "/ws/a.txt 7"
    optional = project.load(module, "g")
    assert optional.parameters["properties"] == {}
    assert call(optional).content == "some"
    assert static_python_tool(project.spec(module, "g"), [project.root]).parameters == (
        optional.parameters
    )


def test_sync_functions_run_in_a_worker_thread_async_ones_on_the_loop(project: Project) -> None:
    module = project.module(
        """
        import asyncio
        import threading

        def sync_f() -> str:
            return threading.current_thread().name

        async def async_f(delay: float = 0) -> str:
            await asyncio.sleep(delay)
            return threading.current_thread().name
        """
    )
    assert call(project.load(module, "sync_f")).content != "MainThread"
    assert call(project.load(module, "async_f"), delay=0.01).content == "MainThread"


def test_json_values_are_converted_back_to_python_types(project: Project) -> None:
    tool = project.tool(
        """
        def f(color: Color, level: Level, shape: Shape, point: Point, pair: tuple[int, str],
              ratio: float, tags: set[str], maybe: Color | None = None) -> str:
            assert isinstance(color, Color) and isinstance(level, Level)
            assert shape is Shape.LINE
            assert isinstance(point, Point) and point.tags == []
            assert isinstance(pair, tuple) and isinstance(ratio, float)
            assert isinstance(tags, set)
            return f"{color.name} {level.name} {point.x} {pair} {ratio!r} {maybe}"
        """
    )
    result = call(
        tool,
        color="red",
        level=2,
        shape="LINE",
        point={"x": 3},
        pair=[1, "a"],
        ratio=2,
        tags=["a"],
        maybe="green",
    )
    assert result.content == "RED HIGH 3 (1, 'a') 2.0 Color.GREEN", result


def test_invalid_arguments_name_the_argument_and_the_model_can_retry(project: Project) -> None:
    tool = project.tool(
        "def f(count: int, mode: Literal['a', 'b'] = 'a') -> int:\n    return count\n"
    )
    wrong_type = call(tool, count="three")
    assert wrong_type.is_error
    assert "argument `count`" in wrong_type.content
    assert "'three' is not of type 'integer'" in wrong_type.content
    missing = call(tool)
    assert missing.is_error and "missing required argument(s) `count`" in missing.content
    extra = call(tool, count=1, colour="red")
    assert extra.is_error and "unknown argument(s) `colour` (allowed: count, mode)" in extra.content
    bad_enum = call(tool, count=1, mode="c")
    assert bad_enum.is_error and "argument `mode`" in bad_enum.content
    assert call(tool, count=3).content == "3"


def test_a_function_that_raises_gives_an_error_result_and_the_tool_still_works(
    project: Project,
) -> None:
    tool = project.tool(
        """
        def helper(amount: float) -> None:
            raise ValueError(f"negative amount {amount}")

        def f(amount: float) -> str:
            if amount < 0:
                helper(amount)
            return "ok"
        """
    )
    failed = call(tool, amount=-1)
    assert failed.is_error
    assert failed.content == "ValueError: negative amount -1.0"
    assert failed.details["exception"] == "ValueError"
    assert "in helper" in failed.details["traceback"]
    assert call(tool, amount=1) == ToolResult("ok", details={"function": tool.source[7:]})


def test_tool_errors_and_system_exit_do_not_end_the_run(project: Project) -> None:
    module = project.module(
        """
        import sys
        from assembler.errors import ToolError

        def refuse() -> None:
            raise ToolError("no such account")

        def leave() -> None:
            sys.exit(3)

        async def broken() -> None:
            raise KeyError("k")
        """
    )
    assert call(project.load(module, "refuse")).content == "no such account"
    assert call(project.load(module, "leave")).content == "SystemExit: 3"
    assert call(project.load(module, "broken")).content == "KeyError: 'k'"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('return "plain text"', "plain text"),
        ("return None", "(no output)"),
        (
            'return {"name": "Zoë", "n": [1, 2]}',
            '{\n  "name": "Zoë",\n  "n": [\n    1,\n    2\n  ]\n}',
        ),
        ("return 42", "42"),
        ("return Point(1)", '{\n  "x": 1,\n  "y": 0.0,\n  "tags": []\n}'),
        ("return Color.RED", '"red"'),
        ("return {1, 2} - {1}", "{2}"),
        ("return b'raw'", "b'raw'"),
    ],
)
def test_return_value_conversion(project: Project, body: str, expected: str) -> None:
    tool = project.tool(f"def f():\n    {body}\n")
    result = call(tool)
    assert (result.content, result.is_error) == (expected, False)


def test_a_returned_tool_result_passes_through(project: Project) -> None:
    tool = project.tool(
        'def f():\n    return ToolResult("custom", is_error=True, details={"k": 1})\n'
    )
    result = call(tool)
    assert (result.content, result.is_error, result.details["k"]) == ("custom", True, 1)


def test_output_is_truncated_to_the_context_limits(project: Project) -> None:
    tool = project.tool(
        'def f(n: int) -> str:\n    return "".join(f"line {i}\\n" for i in range(n))\n'
    )
    result = call(tool, ToolContext(workspace=Path.cwd(), max_output_lines=10), n=100)
    lines = result.content.splitlines()
    assert lines[:10] == [f"line {i}" for i in range(10)]
    assert (
        lines[10] == "[output truncated: showing lines 1-10 of 100 (10-line limit); 90 lines cut]"
    )
    assert result.details["truncated"] is True
    assert call(tool, n=3).content == "line 0\nline 1\nline 2\n"


def test_timeouts_give_an_error_result(project: Project) -> None:
    module = project.module(
        """
        import asyncio
        import time

        async def slow_async() -> str:
            await asyncio.sleep(10)
            return "late"

        def slow_sync() -> str:
            time.sleep(0.3)
            return "late"
        """
    )
    ctx = ToolContext(workspace=Path.cwd(), timeout=0.05)
    result = call(project.load(module, "slow_async"), ctx)
    assert result.is_error and result.content == "slow_async did not finish within 0.05 s"
    result = call(project.load(module, "slow_sync"), ctx)
    assert result.is_error and "cannot be stopped" in result.content


# --- loading errors ----------------------------------------------------------------


def test_loading_errors_name_the_reference(project: Project) -> None:
    module = project.module(
        """
        class Tool:
            pass

        value = 3

        def variadic(*items: str) -> None:
            pass

        def keywords(**options: str) -> None:
            pass

        def gen():
            yield 1
        """
    )
    cases = {
        "Tool": "is a class, not a function",
        "missing": f"`{module}` has no top-level function `missing`",
        "value": "it is a int, not a function",
        "variadic": "`*items` is not supported",
        "keywords": "`**options` is not supported",
        "gen": "generator",
    }
    for function, message in cases.items():
        with pytest.raises(ToolError, match=rf"`{module}:{function}`") as caught:
            project.load(module, function)
        assert message in str(caught.value)
    with pytest.raises(ToolError, match="module `no_such_module_xyz` not found"):
        load_python_tool(PythonToolSpec("no_such_module_xyz:f"), [project.root])


def test_an_import_that_fails_is_reported(project: Project) -> None:
    module = project.module("import no_such_dependency_xyz\n", header=False)
    with pytest.raises(ToolError, match=r"importing .* failed: ModuleNotFoundError"):
        project.load(module, "f")
    module = project.module("raise RuntimeError('boom')\n", header=False)
    with pytest.raises(ToolError, match="RuntimeError: boom"):
        project.load(module, "f")


def test_roots_are_searched_without_polluting_sys_path(project: Project) -> None:
    package = project.root / "pytool_pkg_roots"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "mod.py").write_text("def hello() -> str:\n    return 'hi'\n")
    before = list(sys.path)
    try:
        tool = load_python_tool(PythonToolSpec("pytool_pkg_roots.sub.mod:hello"), [project.root])
        assert call(tool).content == "hi"
        assert sys.path == before
        # Found where validation finds it, or not at all: an imported module is not
        # handed out when the manifest's roots no longer hold it.
        with pytest.raises(ToolError, match="not found"):
            load_python_tool(PythonToolSpec("pytool_pkg_roots.sub.mod:hello"), [])
        assert sys.path == before
    finally:
        for name in ("pytool_pkg_roots.sub.mod", "pytool_pkg_roots.sub", "pytool_pkg_roots"):
            sys.modules.pop(name, None)


def test_a_module_a_plain_module_imports_is_reached_through_it(project: Project) -> None:
    """`os.path:basename`, and `tools.helpers:f` where `tools` imports a module as
    `helpers`: found from source where validation finds it, then imported from there."""
    helper = project.module(
        """
        def shout(text: str) -> str:
            \"\"\"Upper-case the text.\"\"\"
            return text.upper()
        """
    )
    main = project.module(f"import {helper} as helpers\n", header=False)
    spec = project.spec(f"{main}.helpers", "shout")
    assert static_python_tool(spec, [project.root]).problems == ()
    tool = load_python_tool(spec, [project.root])
    assert call(tool, text="hi").content == "HI"
    assert static_python_tool(spec, [project.root]).parameters == tool.parameters
    basename = load_python_tool(PythonToolSpec("os.path:basename"), [project.root])
    assert call(basename, p="/srv/shop/fees.py").content == "fees.py"


def test_hints_that_only_fail_for_the_return_type_are_fine(project: Project) -> None:
    module = project.module(
        """
        from __future__ import annotations
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from decimal import Decimal

        def f(x: int) -> Decimal:
            return x

        def g(x: Decimal) -> None:
            pass
        """,
        header=False,
    )
    assert prop(project.load(module, "f")) == {"type": "integer"}
    with pytest.raises(ToolError, match=r"type of parameter `x` cannot be resolved.*Decimal"):
        project.load(module, "g")


def test_tool_from_function_object(project: Project) -> None:
    def scale(value: float, factor: int = 2) -> float:
        """Scale a value."""
        return value * factor

    class Counter:
        def __init__(self) -> None:
            self.count = 0

        def bump(self, by: int = 1) -> int:
            """Bump the counter."""
            self.count += by
            return self.count

    tool = tool_from_function(scale, source="extension:demo")
    assert (tool.name, tool.description, tool.source) == (
        "scale",
        "Scale a value.",
        "extension:demo",
    )
    assert tool.parameters["required"] == ["value"]
    assert call(tool, value=1.5).content == "3.0"
    counter = Counter()
    bump = tool_from_function(counter.bump, name="bump_it")
    assert bump.name == "bump_it"
    assert list(bump.parameters["properties"]) == ["by"]
    assert call(bump, by=3).content == "3"
    with pytest.raises(ToolError, match="not a function"):
        tool_from_function(len)


# --- the static view -----------------------------------------------------------------

PARITY_CORPUS = '''
import typing as t
from collections import abc
from typing import Annotated, Literal, Optional

from assembler.tools.base import ToolContext

Unit = Literal["m", "km"]
DEFAULT_LIMIT = 20


def plain(a, b=1):
    """Add two numbers."""
    return a + b


def typed(name: str, count: int = 3, ratio: float = 0.5, flag: bool = False) -> str:
    """Greet someone.

    Several times, if asked.

    Args:
        name: Who to greet.
        count: How many times.
    """
    return name * count


async def fetch(url: str, timeout: float | None = None, *, headers: dict[str, str] | None = None):
    """Fetch a URL.

    :param url: The address.
    :param timeout: Seconds to wait.
    """


def convert(value: float, unit: Unit = "m", precision: "int" = 2) -> float:
    """Convert a distance.

    Parameters
    ----------
    value : float
        The distance.
    unit : str
        Target unit.
    """
    return value


def search(
    query: Annotated[str, "What to look for."],
    limit: int = DEFAULT_LIMIT,
    kinds: t.Sequence[Literal["file", "dir"]] = ("file",),
) -> list[str]:
    return []


def tagged(tags: abc.Mapping[str, list[int]], pair: tuple[str, int], ctx: ToolContext) -> None:
    """Tag things.

    Returns:
        Nothing.
    """


def optional_things(a: Optional[int], b: t.Union[str, int, None] = None, c: set[str] | None = None):
    """Optional things."""


def nothing() -> None:
    """Do nothing at all.
    Really nothing."""


def positional(a: int, /, b: str = "x", *, c: bool = True) -> None:
    """Mixed kinds.

    Args:
        a (int): First.
        b: Second,
            continued.
        c: Third.
    """


def anything(x: t.Any, y: object = None, z: list = [], w: dict = {}) -> None:
    pass
'''

PARITY_FUNCTIONS = [
    "plain",
    "typed",
    "fetch",
    "convert",
    "search",
    "tagged",
    "optional_things",
    "nothing",
    "positional",
    "anything",
]


@pytest.mark.parametrize("function", PARITY_FUNCTIONS)
def test_static_view_equals_the_loaded_tool(project: Project, function: str) -> None:
    module = project.module(PARITY_CORPUS, header=False)
    spec = project.spec(module, function)
    static = static_python_tool(spec, [project.root])
    tool = load_python_tool(spec, [project.root])
    assert static.problems == ()
    assert (static.name, static.description, static.snippet) == (
        tool.name,
        tool.description,
        tool.snippet,
    )
    assert static.parameters == tool.parameters


def test_static_view_does_not_import(project: Project, tmp_path: Path) -> None:
    marker = tmp_path / "imported.marker"
    module = project.module(
        f'''
        from pathlib import Path

        Path({str(marker)!r}).write_text("imported")


        def f(x: int) -> int:
            """Echo."""
            return x
        ''',
        header=False,
    )
    spec = project.spec(module, "f")
    static = static_python_tool(spec, [project.root])
    assert (static.name, static.description, static.problems) == ("f", "Echo.", ())
    assert module not in sys.modules
    assert not marker.exists()
    load_python_tool(spec, [project.root])
    assert marker.exists()


def test_static_view_reports_what_it_cannot_know(project: Project) -> None:
    module = project.module(
        '''
        import functools

        def deco(fn):
            return fn

        @deco
        def decorated(x: int) -> int:
            """Decorated."""
            return x

        def enum_default(c: str = Color.RED.value, d: int = len("ab")) -> None:
            pass

        def variadic(*args: int) -> None:
            pass
        '''
    )

    def problems(function: str) -> tuple[str, ...]:
        return static_python_tool(project.spec(module, function), [project.root]).problems

    assert problems("decorated") == (
        f"`{module}:decorated` is decorated: what the decorator changes is only known at run time",
    )
    assert problems("enum_default") == (
        "parameter `c`: default `Color.RED.value` is only known at run time",
        "parameter `d`: default `len('ab')` is only known at run time",
    )
    assert problems("variadic") == (
        "`*args` is not supported: a tool is called with named arguments",
    )
    missing = static_python_tool(project.spec(module, "missing"), [project.root])
    assert missing.problems == (f"`{module}` has no top-level function `missing`",)
    assert missing.description == f"Call {module}:missing"
    assert missing.parameters == {"type": "object"}
    klass = static_python_tool(project.spec(module, "Point"), [project.root])
    assert klass.problems == (f"`{module}:Point` is a class, not a function",)
    gone = static_python_tool(PythonToolSpec("no_such_module_xyz:f"), [project.root])
    assert "module `no_such_module_xyz` not found" in gone.problems[0]
    assert module not in sys.modules


def test_static_view_names_a_shadowed_builtin_as_unknown(project: Project) -> None:
    module = project.module(
        """
        class str:  # noqa: A001
            pass

        def f(x: str) -> None:
            pass
        """,
        header=False,
    )
    static = static_python_tool(project.spec(module, "f"), [project.root])
    assert static.problems == ("parameter `x`: type `str` is only known at run time",)
