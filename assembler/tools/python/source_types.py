"""The schema of an annotation read from source, without importing its module.

`render --dry-run` must not run project code, yet its prompt has to equal the real
one. `SourceTypes` reads the annotation and default expressions of a parsed module and
builds each schema through the constructors `hint_schema` uses (equal dicts, equal
key order). Where the source alone cannot say what a type is (a project class, an
Enum, a TypedDict), it raises `RuntimeOnly` instead of guessing.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from assembler.python_refs import ParsedModule, parse_expression
from assembler.tools.python.schema import (
    RuntimeOnly,
    Schema,
    SchemaError,
    array,
    described,
    enumeration,
    fixed_array,
    is_primitive,
    mapping,
    scalar,
    union,
)

_SCALAR_NAMES = {
    "builtins.str": "string",
    "builtins.int": "integer",
    "builtins.float": "number",
    "builtins.bool": "boolean",
    "types.NoneType": "null",
}
_ANY_NAMES = {"typing.Any", "builtins.object"}
_SEQUENCE_NAMES = {
    "builtins.list",
    "typing.List",
    *(
        f"{module}.{name}"
        for module in ("typing", "collections.abc")
        for name in ("Sequence", "MutableSequence", "Collection", "Iterable")
    ),
}
_SET_NAMES = {
    "builtins.set",
    "typing.Set",
    "typing.AbstractSet",
    "collections.abc.Set",
    "typing.MutableSet",
    "collections.abc.MutableSet",
}
_FROZENSET_NAMES = {"builtins.frozenset", "typing.FrozenSet"}
_TUPLE_NAMES = {"builtins.tuple", "typing.Tuple"}
_MAPPING_NAMES = {
    "builtins.dict",
    "typing.Dict",
    "typing.Mapping",
    "collections.abc.Mapping",
    "typing.MutableMapping",
    "collections.abc.MutableMapping",
}


Bindings = Mapping[str, list[ast.AST | str]]
"""Every module-level binding of each name, in source order."""


def module_bindings(tree: ast.Module) -> Bindings:
    """How the module binds each name at its top level (read by `SourceTypes`)."""
    bindings: dict[str, list[ast.AST | str]] = {}

    def bind(name: str, target: ast.AST | str) -> None:
        bindings.setdefault(name, []).append(target)

    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    bind(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    bind(top, top)
        elif isinstance(statement, ast.ImportFrom):
            prefix = "." * statement.level + (statement.module or "")
            for alias in statement.names:
                bind(alias.asname or alias.name, f"{prefix}.{alias.name}")
        elif isinstance(statement, ast.Assign):
            simple = len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
            for target in statement.targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        bind(node.id, statement.value if simple else statement)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            bind(statement.target.id, statement.value or statement)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bind(statement.name, statement)
        else:
            # Names bound inside `if`, `try`, loops...: which binding wins is only
            # known at run time, so record them as unknowable.
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    bind(node.id, statement)
                elif isinstance(node, ast.alias):
                    bind(node.asname or node.name.split(".")[0], statement)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    bind(node.name, statement)
    return bindings


class SourceTypes:
    """Reads annotation and default expressions of one parsed module, statically.

    A name is recognised by how the module binds it: imported from `typing` or
    `collections.abc`, a builtin the module does not rebind, or a module-level alias
    (`Unit = Literal["m", "km"]`) of something recognisable. Anything else raises
    `RuntimeOnly`.
    """

    def __init__(self, tree: ast.Module, bindings: Bindings | None = None) -> None:
        self._bindings = module_bindings(tree) if bindings is None else bindings
        self._expanding: set[str] = set()

    @classmethod
    def of(cls, module: ParsedModule) -> SourceTypes:
        """A reader for a parsed file, its bindings computed once per parse (a module
        with 1,000 tools is read 1,000 times). Each reader keeps its own expansion
        state, so readers of one file can work in different threads."""
        assert module.tree is not None
        return cls(module.tree, module.derive(module_bindings))

    def qualify(self, node: ast.expr) -> str | None:
        """The dotted name an expression refers to (`typing.Optional`), or None;
        `typing_extensions` names count as `typing` ones."""
        name = self._dotted(node)
        if name and name.startswith("typing_extensions."):
            return "typing." + name.removeprefix("typing_extensions.")
        return name

    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        if not isinstance(node, ast.Name):
            return None
        bound = self._bindings.get(node.id)
        if bound is None:
            return f"builtins.{node.id}" if hasattr(builtins, node.id) else None
        if len(bound) == 1 and isinstance(bound[0], str):
            return bound[0]
        return None

    def alias(self, node: ast.expr) -> ast.expr | None:
        """The value of a module-level `Name = <expr>` the node refers to, if unique."""
        if isinstance(node, ast.Name):
            bound = self._bindings.get(node.id, [])
            if len(bound) == 1 and isinstance(bound[0], ast.expr):
                return bound[0]
        return None

    def annotation(self, node: ast.expr | None) -> Schema:
        """The schema `hint_schema` gives for this annotation at run time."""
        if node is None:
            return {}
        if isinstance(node, ast.Constant):
            if node.value is None:
                return scalar("null")
            if isinstance(node.value, str):
                try:
                    parsed = parse_expression(node.value.strip())
                except SyntaxError:
                    raise RuntimeOnly(node.value) from None
                return self.annotation(parsed)
            raise RuntimeOnly(ast.unparse(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return union([self.annotation(node.left), self.annotation(node.right)])
        if isinstance(node, ast.Subscript):
            return self._generic(node)
        name = self.qualify(node)
        if name is None:
            return self._expand_alias(node)
        if name in _ANY_NAMES:
            return {}
        if name in _SCALAR_NAMES:
            return scalar(_SCALAR_NAMES[name])
        if name in _SEQUENCE_NAMES or name in _TUPLE_NAMES:
            return array(None)
        if name in _SET_NAMES or name in _FROZENSET_NAMES:
            return array(None, unique=True)
        if name in _MAPPING_NAMES:
            return mapping(None)
        raise RuntimeOnly(ast.unparse(node))

    def _expand_alias(self, node: ast.expr) -> Schema:
        value = self.alias(node)
        key = ast.unparse(node)
        if value is None or key in self._expanding:
            raise RuntimeOnly(key)
        self._expanding.add(key)
        try:
            return self.annotation(value)
        finally:
            self._expanding.discard(key)

    def _generic(self, node: ast.Subscript) -> Schema:
        name = self.qualify(node.value)
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "typing.Annotated":
            schema = self.annotation(args[0])
            return described(schema, self._annotated_note(args[1:], node))
        if name == "typing.Optional":
            return union([self.annotation(args[0]), scalar("null")])
        if name == "typing.Union":
            return union([self.annotation(arg) for arg in args])
        if name == "typing.Literal":
            return enumeration(list(self._literal_values(args)))
        if name in _TUPLE_NAMES:
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                return array(self.annotation(args[0]))
            if isinstance(node.slice, ast.Tuple) and not args:
                return array(None)
            return fixed_array([self.annotation(arg) for arg in args])
        if name in _SEQUENCE_NAMES:
            return array(self.annotation(args[0]))
        if name in _SET_NAMES or name in _FROZENSET_NAMES:
            return array(self.annotation(args[0]), unique=True)
        if name in _MAPPING_NAMES and len(args) == 2:
            if self.qualify(args[0]) not in ("builtins.str", "typing.Any"):
                raise SchemaError(
                    f"`{ast.unparse(node)}`: JSON object keys are strings, use `str` keys"
                )
            return mapping(self.annotation(args[1]))
        raise RuntimeOnly(ast.unparse(node))

    def _annotated_note(self, metadata: Sequence[ast.expr], node: ast.expr) -> str | None:
        """The first string in `Annotated[...]` metadata, as `typing` would find it."""
        for item in metadata:
            if isinstance(item, ast.Constant):
                if isinstance(item.value, str):
                    return item.value
                continue
            raise RuntimeOnly(ast.unparse(node))
        return None

    def _literal_values(self, args: Sequence[ast.expr]) -> Iterator[Any]:
        for arg in args:
            if isinstance(arg, ast.Subscript) and self.qualify(arg.value) == "typing.Literal":
                inner = arg.slice
                yield from self._literal_values(
                    list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
                )
                continue
            try:
                value = ast.literal_eval(arg)
            except ValueError:
                raise RuntimeOnly(ast.unparse(arg)) from None
            if not is_primitive(value):
                raise SchemaError(f"Literal value {value!r} is not a JSON string, number or bool")
            yield value

    def default(self, node: ast.expr) -> Any:
        """The value of a default expression: a literal, or a module-level name bound
        once to a literal. Anything else (a call, an Enum member) raises `RuntimeOnly`."""
        target = self.alias(node) if isinstance(node, ast.Name) else node
        if target is None:
            raise RuntimeOnly(ast.unparse(node))
        try:
            return ast.literal_eval(target)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise RuntimeOnly(ast.unparse(node)) from None
