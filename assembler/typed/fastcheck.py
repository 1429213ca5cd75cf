"""A schema compiled to Python closures: "this value is valid" in microseconds.

jsonschema descends into every array item and property through a fresh validator
object (about 18 us each), so a 1 MB answer of a few thousand items took 150 ms. Most
answers are valid, and a valid one needs no error messages: `compile_fast` turns a
schema into one predicate per subschema, specialised when it is built (once per
agent), for the keywords typed answers use.

It is sure or it defers. The predicate answers True only where jsonschema's Draft
2020-12 validator says valid; False means "invalid, or not sure" and the caller asks
jsonschema, which gives the verdict and every error message. A schema that uses a
keyword not implemented here compiles to None (jsonschema alone). Keywords whose
verdict turns a sub-result around (`not`, `oneOf`, `if`) are not implemented, since a
sub-predicate's "not sure" would become a wrong "valid" there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {
        "$comment", "$defs", "definitions", "$schema", "title", "description", "default",
        "examples", "deprecated", "readOnly", "writeOnly", "format", "contentMediaType",
        "contentEncoding",
    }
)  # fmt: skip
"""Keywords that do not affect validity (`format` is an annotation without a format
checker, which `compile_schema` does not pass)."""


class _Unsupported(Exception):
    """A keyword or form this module does not implement: jsonschema decides."""


def compile_fast(schema: Any) -> Predicate | None:
    """The schema's predicate (see the module docstring), or None."""
    try:
        return _Compiler(schema).compile(schema)
    except (_Unsupported, re.error, TypeError, ValueError, RecursionError):
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: Mapping[str, Predicate] = {
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _scalar_equal(a: Any, b: Any) -> bool:
    """JSON equality of scalars, as jsonschema has it: `true` is not `1`, `1` is `1.0`."""
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    return _is_number(a) and _is_number(b) and bool(a == b)


class _Compiler:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Predicate] = {}

    def compile(self, schema: Any) -> Predicate:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, Mapping):
            raise _Unsupported("a schema that is neither an object nor a boolean")
        checks: list[Predicate] = []
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or keyword.startswith("x-"):
                continue
            if keyword == "$id" and schema is self.root:
                continue
            if keyword.startswith("$") and keyword != "$ref":
                raise _Unsupported(keyword)  # `$anchor`, `$dynamicRef`, a nested `$id`
            build = getattr(self, "_k_" + keyword.removeprefix("$"), None)
            if build is None:
                raise _Unsupported(keyword)
            check = build(value, schema)
            if check is not None:
                checks.append(check)
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return lambda v: all(check(v) for check in checks)

    # -- keywords ------------------------------------------------------------------

    def _k_type(self, kind: Any, schema: Any) -> Predicate:
        names = [kind] if isinstance(kind, str) else kind
        if not isinstance(names, list) or not all(n in _TYPES for n in names):
            raise _Unsupported("type")
        tests = [_TYPES[n] for n in names]
        return tests[0] if len(tests) == 1 else (lambda v: any(t(v) for t in tests))

    def _k_enum(self, values: Any, schema: Any) -> Predicate:
        if not isinstance(values, list) or any(isinstance(x, list | dict) for x in values):
            raise _Unsupported("enum of arrays or objects")
        return lambda v: any(_scalar_equal(v, x) for x in values)

    def _k_const(self, value: Any, schema: Any) -> Predicate:
        if isinstance(value, list | dict):
            raise _Unsupported("const of an array or object")
        return lambda v: _scalar_equal(v, value)

    def _k_properties(self, properties: Any, schema: Any) -> Predicate:
        compiled = [(name, self.compile(sub)) for name, sub in properties.items()]
        return lambda v: (
            not isinstance(v, dict) or all(check(v[name]) for name, check in compiled if name in v)
        )

    def _k_patternProperties(self, patterns: Any, schema: Any) -> Predicate:
        compiled = [(re.compile(p), self.compile(sub)) for p, sub in patterns.items()]
        return lambda v: (
            not isinstance(v, dict)
            or all(
                check(value)
                for pattern, check in compiled
                for name, value in v.items()
                if pattern.search(name)
            )
        )

    def _k_additionalProperties(self, extra: Any, schema: Any) -> Predicate:
        known = set(schema.get("properties", {}))
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        check = self.compile(extra)

        def extras_valid(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            return all(
                check(value)
                for name, value in v.items()
                if name not in known and not any(p.search(name) for p in patterns)
            )

        return extras_valid

    def _k_required(self, names: Any, schema: Any) -> Predicate:
        wanted = list(names)
        return lambda v: not isinstance(v, dict) or all(name in v for name in wanted)

    def _k_propertyNames(self, names: Any, schema: Any) -> Predicate:
        check = self.compile(names)
        return lambda v: not isinstance(v, dict) or all(check(name) for name in v)

    def _k_minProperties(self, least: Any, schema: Any) -> Predicate:
        return lambda v: not isinstance(v, dict) or len(v) >= least

    def _k_maxProperties(self, most: Any, schema: Any) -> Predicate:
        return lambda v: not isinstance(v, dict) or len(v) <= most

    def _k_prefixItems(self, prefix: Any, schema: Any) -> Predicate:
        compiled = [self.compile(sub) for sub in prefix]
        return lambda v: (
            not isinstance(v, list)
            or all(check(item) for check, item in zip(compiled, v, strict=False))
        )

    def _k_items(self, items: Any, schema: Any) -> Predicate:
        skip = len(schema.get("prefixItems", ()))
        if items == {"type": "string"}:  # the common case, without a call per item
            return lambda v: (
                not isinstance(v, list) or all(isinstance(item, str) for item in v[skip:])
            )
        check = self.compile(items)
        return lambda v: not isinstance(v, list) or all(check(item) for item in v[skip:])

    def _k_minItems(self, least: Any, schema: Any) -> Predicate:
        return lambda v: not isinstance(v, list) or len(v) >= least

    def _k_maxItems(self, most: Any, schema: Any) -> Predicate:
        return lambda v: not isinstance(v, list) or len(v) <= most

    def _k_minLength(self, least: Any, schema: Any) -> Predicate:
        return lambda v: not isinstance(v, str) or len(v) >= least

    def _k_maxLength(self, most: Any, schema: Any) -> Predicate:
        return lambda v: not isinstance(v, str) or len(v) <= most

    def _k_pattern(self, pattern: Any, schema: Any) -> Predicate:
        compiled = re.compile(pattern)
        return lambda v: not isinstance(v, str) or compiled.search(v) is not None

    def _k_minimum(self, bound: Any, schema: Any) -> Predicate:
        return lambda v: not _is_number(v) or v >= bound

    def _k_maximum(self, bound: Any, schema: Any) -> Predicate:
        return lambda v: not _is_number(v) or v <= bound

    def _k_exclusiveMinimum(self, bound: Any, schema: Any) -> Predicate:
        return lambda v: not _is_number(v) or v > bound

    def _k_exclusiveMaximum(self, bound: Any, schema: Any) -> Predicate:
        return lambda v: not _is_number(v) or v < bound

    def _k_multipleOf(self, factor: Any, schema: Any) -> Predicate:
        if not isinstance(factor, int) or isinstance(factor, bool):
            raise _Unsupported("a multipleOf that is not an integer")
        # a float is left to jsonschema (its float arithmetic decides there)
        return lambda v: not _is_number(v) or (isinstance(v, int) and v % factor == 0)

    def _k_allOf(self, schemas: Any, schema: Any) -> Predicate:
        compiled = [self.compile(sub) for sub in schemas]
        return lambda v: all(check(v) for check in compiled)

    def _k_anyOf(self, schemas: Any, schema: Any) -> Predicate:
        compiled = [self.compile(sub) for sub in schemas]
        return lambda v: any(check(v) for check in compiled)

    def _k_ref(self, reference: Any, schema: Any) -> Predicate:
        if not isinstance(reference, str) or not reference.startswith("#/") or "%" in reference:
            raise _Unsupported("a $ref that is not a local JSON pointer")
        if reference not in self.refs:
            target: Any = self.root
            for token in reference[2:].split("/"):
                key = token.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, Mapping) or key not in target:
                    raise _Unsupported("a $ref that resolves to nothing")
                target = target[key]
            slot: list[Predicate] = []

            def late(value: Any) -> bool:  # a recursive schema refers back to itself
                return slot[0](value)

            self.refs[reference] = late
            slot.append(self.compile(target))
        return self.refs[reference]
