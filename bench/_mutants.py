"""The mutants of one Python file: small changes to its syntax tree, one at a time.

Each mutant is a single change of the kind a slip of the keyboard makes and a test
should notice: a comparison flipped at its boundary (`<` to `<=`, `==` to `!=`), a
condition negated, `and` for `or`, `not` dropped, a number off by one, `True` for
`False`, a string emptied, a `return` of `None`, a call statement removed (a cache
entry never moved to the end), a `raise` removed (a guard that never fires), `+=`
for `-=`, `break` for `continue`.

Left alone, because a change there is a change of declaration rather than of
behaviour: docstrings, type annotations, decorators, `if TYPE_CHECKING:` blocks,
imports, `__all__`, the field declarations of a class body, `__repr__`, and the text of error
messages (inside a `raise` only its removal is a mutant; tests pin the messages that
matter by their own means). A statement whose first line says `# pragma: no mutate` (sample data,
say, where any value of the right kind does) is skipped whole.

A mutant is found again in a fresh parse by its path from the module root, so
listing and applying walk the tree the same way and always agree.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Path_ = tuple[tuple[str, int | None], ...]
"""Where a node sits: (field name, index in a list field or None) from the module."""

_FLIP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_FLIP_BINOP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
}
_CONTEXT_CHARS = 90
"""How much source a mutant's description may show around the change."""


@dataclass(frozen=True)
class Mutant:
    """One change to one file. `before` and `after` show the smallest enclosing piece
    of code that reads well (a comparison, a short statement), so a survivor can be
    recognised without opening the file; together with `scope` (the enclosing
    function) they name the mutant independently of line numbers."""

    path: str
    line: int
    scope: str
    kind: str
    before: str
    after: str
    node_path: Path_
    variant: int

    @property
    def ident(self) -> str:
        return f"{self.path}:{self.line}: {self.before} -> {self.after}"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What the list of equivalent mutants matches on (no line number: a line
        added above must not orphan an entry)."""
        return (self.path, self.scope, self.before, self.after)


@dataclass(frozen=True)
class _Point:
    node_path: Path_
    kind: str
    make: Callable[[Any], ast.AST]


def mutants(path: str, source: str) -> list[Mutant]:
    """Every mutant of `source` (the file at repo-relative `path`), in file order."""
    tree = ast.parse(source)
    skip_lines = _pragma_lines(tree, source)
    found: list[Mutant] = []
    seen: dict[tuple[str, str, str], int] = {}
    for variant, point in enumerate(_points(tree)):
        node = _get(tree, point.node_path)
        if getattr(node, "lineno", 0) in skip_lines:
            continue
        before, after = _describe(tree, point)
        if before == after:
            continue
        scope = _scope(tree, point.node_path)
        seen[(scope, before, after)] = count = seen.get((scope, before, after), 0) + 1
        if count > 1:  # the same change twice in one function: tell them apart
            after = f"{after}  # {count}"
        found.append(
            Mutant(
                path=path,
                line=node.lineno,
                scope=scope,
                kind=point.kind,
                before=before,
                after=after,
                node_path=point.node_path,
                variant=variant,
            )
        )
    return found


def _pragma_lines(tree: ast.Module, source: str) -> set[int]:
    """Lines not to mutate: those of every statement whose first line says
    `# pragma: no mutate` (with the reason after it)."""
    marked = {
        number
        for number, text in enumerate(source.splitlines(), start=1)
        if "# pragma: no mutate" in text
    }
    lines = set(marked)
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno in marked:
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def mutated_tree(source: str, mutant: Mutant) -> ast.Module:
    """The tree of `source` with `mutant` applied (a fresh parse, changed in place)."""
    tree = ast.parse(source)
    point = list(_points(tree))[mutant.variant]
    if point.node_path != mutant.node_path:
        raise ValueError(f"the source changed since {mutant.ident} was listed")
    _set(tree, point.node_path, point.make(copy.deepcopy(_get(tree, point.node_path))))
    return ast.fix_missing_locations(tree)


def statement_lines(tree: ast.Module, node_path: Path_) -> tuple[int, int, bool]:
    """The lines of the statement holding the node (its header only, for `if`/`for`/...)
    and whether that statement runs inside a function each time it is called. False
    for code that runs at import, and for the body of a cached function (`@cache`,
    `@lru_cache`, `@cached_property`): that runs once per process, under whichever
    test called it first, so the tests that reach it cannot be told by tracing."""
    node: Any = tree
    statement: Any = None
    in_function = False
    cached = False
    for field, index in node_path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
        if isinstance(node, ast.stmt):
            if statement is not None and isinstance(
                statement, ast.FunctionDef | ast.AsyncFunctionDef
            ):
                in_function = True
                cached = cached or any(_is_cache(d) for d in statement.decorator_list)
            statement = node
    if statement is None:
        return (1, 1, False)
    last = statement.end_lineno or statement.lineno
    body = getattr(statement, "body", None)
    if isinstance(body, list) and body and isinstance(statement, ast.stmt):
        last = max(statement.lineno, body[0].lineno - 1)
    return (statement.lineno, last, in_function and not cached)


def _is_cache(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("cache", "lru_cache", "cached_property")


def _points(tree: ast.Module) -> Iterator[_Point]:
    yield from _walk(tree, ())


def _walk(node: ast.AST, here: Path_) -> Iterator[_Point]:
    if isinstance(node, ast.Raise):
        # whether the guard fires is behaviour; the words of its message are not
        yield _Point(here, "removed raise", lambda n: ast.Pass())
        return
    yield from _node_points(node, here)
    for field, value in ast.iter_fields(node):
        if _skipped_field(node, field):
            continue
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST) and not _skipped_child(node, field, index, item):
                    yield from _walk(item, (*here, (field, index)))
        elif isinstance(value, ast.AST):
            yield from _walk(value, (*here, (field, None)))


def _skipped_field(node: ast.AST, field: str) -> bool:
    if isinstance(node, ast.Assert) and field == "msg":
        return True  # the words of a failed assertion, like a raise's
    return field in ("annotation", "returns", "decorator_list", "type_comment")


def _skipped_child(parent: ast.AST, field: str, index: int, child: ast.AST) -> bool:
    if isinstance(child, ast.Import | ast.ImportFrom):
        return True
    if _is_docstring(child):  # also the string after an assignment that documents it
        return True
    if isinstance(child, ast.If) and _is_type_checking(child.test):
        return True
    if isinstance(parent, ast.ClassDef) and isinstance(child, ast.AnnAssign):
        return True
    if isinstance(child, ast.FunctionDef) and child.name == "__repr__":
        return True  # text for a debugger, not behaviour
    if isinstance(child, ast.Assign) and any(
        isinstance(target, ast.Name) and target.id == "__all__" for target in child.targets
    ):
        return True
    return isinstance(child, ast.If) and _is_main_guard(child.test)


def _node_points(node: ast.AST, here: Path_) -> Iterator[_Point]:
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            flipped = _FLIP_COMPARE.get(type(op))
            if flipped is not None:
                yield _Point(here, "compare", _replace_op(index, flipped))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield _Point(here, "boolean", lambda n, other=other: ast.BoolOp(other(), n.values))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield _Point(here, "not", lambda n: n.operand)
    elif isinstance(node, ast.BinOp):
        binop = _FLIP_BINOP.get(type(node.op))
        if binop is not None:
            yield _Point(here, "arithmetic", lambda n, b=binop: ast.BinOp(n.left, b(), n.right))
    elif isinstance(node, ast.AugAssign):
        augop = _FLIP_BINOP.get(type(node.op))
        if augop is not None:
            yield _Point(
                here, "arithmetic", lambda n, b=augop: ast.AugAssign(n.target, b(), n.value)
            )
    elif isinstance(node, ast.Constant):
        yield from _constant_points(node, here)
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield _Point(here, "return", lambda n: ast.Return(ast.Constant(None)))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call | ast.Await):
        yield _Point(here, "removed call", lambda n: ast.Pass())
    elif isinstance(node, ast.Break):
        yield _Point(here, "loop", lambda n: ast.Continue())
    elif isinstance(node, ast.Continue):
        yield _Point(here, "loop", lambda n: ast.Break())
    test = getattr(node, "test", None)
    if isinstance(node, ast.If | ast.While | ast.IfExp) and _negatable(test):
        yield _Point((*here, ("test", None)), "condition", _negate)
    if isinstance(node, ast.comprehension):
        for index, condition in enumerate(node.ifs):
            if _negatable(condition):
                yield _Point((*here, ("ifs", index)), "condition", _negate)


def _constant_points(node: ast.Constant, here: Path_) -> Iterator[_Point]:
    value = node.value
    if isinstance(value, bool):
        yield _Point(here, "constant", lambda n: ast.Constant(not n.value))
    elif isinstance(value, int):
        yield _Point(here, "constant", lambda n: ast.Constant(n.value + 1))
    elif isinstance(value, str):
        replacement = "" if value else "mutant"
        yield _Point(here, "string", lambda n, r=replacement: ast.Constant(r))


def _replace_op(index: int, flipped: type[ast.cmpop]) -> Callable[[Any], ast.AST]:
    def make(node: ast.Compare) -> ast.AST:
        ops = list(node.ops)
        ops[index] = flipped()
        return ast.Compare(node.left, ops, node.comparators)

    return make


def _negatable(test: object) -> bool:
    """Comparisons and `not` already have their own flips; negating them again would
    only count the same change twice."""
    if not isinstance(test, ast.expr):
        return False
    if isinstance(test, ast.Compare) and all(type(op) in _FLIP_COMPARE for op in test.ops):
        return False
    return not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not))


def _negate(node: ast.expr) -> ast.AST:
    return ast.UnaryOp(ast.Not(), node)


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def _get(tree: ast.AST, node_path: Path_) -> Any:
    node: Any = tree
    for field, index in node_path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
    return node


def _set(tree: ast.AST, node_path: Path_, value: ast.AST) -> None:
    parent = _get(tree, node_path[:-1])
    field, index = node_path[-1]
    old = getattr(parent, field) if index is None else getattr(parent, field)[index]
    ast.copy_location(value, old)
    if index is None:
        setattr(parent, field, value)
    else:
        getattr(parent, field)[index] = value


def _scope(tree: ast.AST, node_path: Path_) -> str:
    names: list[str] = []
    node: Any = tree
    for field, index in node_path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
    return ".".join(names) or "<module>"


def _describe(tree: ast.Module, point: _Point) -> tuple[str, str]:
    """The change as `before -> after`, widened to the enclosing expression or short
    simple statement while that stays on one readable line."""
    shown = point.node_path
    for depth in range(len(point.node_path) - 1, 0, -1):
        parent = _get(tree, point.node_path[:depth])
        if not isinstance(
            parent, ast.expr | ast.keyword | ast.Assign | ast.AugAssign | ast.Return | ast.Expr
        ):
            break
        if len(_unparse(parent)) > _CONTEXT_CHARS:
            break
        shown = point.node_path[:depth]
    replacement = point.make(copy.deepcopy(_get(tree, point.node_path)))
    inner = point.node_path[len(shown) :]
    if inner:
        changed = copy.deepcopy(_get(tree, shown))
        _set(changed, inner, replacement)
    else:
        changed = replacement
    return _unparse(_get(tree, shown)), _unparse(changed)


def _unparse(node: ast.AST) -> str:
    if isinstance(node, ast.Pass):
        return "pass"
    return " ".join(ast.unparse(node).split())
