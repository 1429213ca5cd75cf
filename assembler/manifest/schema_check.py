"""Does a document conform to the schema? Answered without importing jsonschema when
it can be.

Importing jsonschema is about a third of the CPU time of `assemble validate`, yet
almost every manifest a command loads is valid. `conforms` walks the schema itself,
for the keywords the published schema uses, with the semantics of jsonschema's Draft
2020-12 validator (its `_keywords` module and the draft 6+ type checker, 4.x);
`schema.schema_issues` imports jsonschema only when `conforms` does not answer True,
so every error a user reads still comes from jsonschema.

It is exact or it abstains. A keyword this module does not implement (anywhere in the
part of the schema a document reaches), a `$ref` that is not a local JSON pointer, or
a value of a type YAML does not produce makes it answer None, and jsonschema decides.
A schema change that adds a keyword therefore costs speed, never correctness.
`tests/manifest/test_schema_check.py` compares both verdicts on the corpus and on
generated documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_ANNOTATIONS = frozenset(
    {
        "$comment",
        "$defs",
        "$schema",
        "default",
        "deprecated",
        "description",
        "examples",
        "readOnly",
        "title",
        "writeOnly",
    }
)
_SCALARS = (str, int, float, bool, type(None))


class _CannotTell(Exception):
    """The document or the schema goes beyond what this module implements."""


def conforms(instance: Any, schema: Mapping[str, Any]) -> bool | None:
    """True if `instance` is valid under `schema`, False if it is not, None when only
    jsonschema can tell."""
    try:
        return _Checker(schema).valid(instance, schema)
    except (_CannotTell, RecursionError):
        return None


class _Checker:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.known: set[int] = set()  # schema objects whose keywords were all checked

    def valid(self, instance: Any, schema: Any) -> bool:
        if schema is True:
            return True
        if schema is False:
            return False
        if not isinstance(schema, Mapping):
            raise _CannotTell("a schema that is neither an object nor a boolean")
        if not isinstance(instance, (dict, list, *_SCALARS)):
            raise _CannotTell(f"a {type(instance).__name__} value")
        if id(schema) not in self.known:
            # Every keyword of this schema object first: keywords depend on their
            # siblings (`additionalProperties` on `patternProperties`, `items` on
            # `prefixItems`), so a verdict is given only if all of them are known.
            self._know(schema)
        for keyword, value in schema.items():
            check = _KEYWORDS.get(keyword)
            if check is not None and not check(self, value, instance, schema):
                return False
        return True

    def _know(self, schema: Mapping[str, Any]) -> None:
        for keyword in schema:
            if keyword in _KEYWORDS or keyword in _ANNOTATIONS or keyword.startswith("x-"):
                continue
            if keyword == "$id" and schema is self.root:
                continue  # a nested `$id` would change how `$ref`s resolve
            raise _CannotTell(f"keyword `{keyword}`")
        self.known.add(id(schema))

    def resolve(self, reference: str) -> Any:
        if reference == "#":
            return self.root
        if not reference.startswith("#/") or "%" in reference:
            raise _CannotTell(f"$ref {reference!r}")
        target: Any = self.root
        for token in reference[2:].split("/"):
            key = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or key not in target:
                raise _CannotTell(f"$ref {reference!r}")
            target = target[key]
        return target


# -- the keywords, each as jsonschema 4.x's `_keywords` has it ------------------------


def _is_type(instance: Any, name: str) -> bool:
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "string":
        return isinstance(instance, str)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if name == "number":
        return isinstance(instance, int | float) and not isinstance(instance, bool)
    if name == "integer":
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    raise _CannotTell(f"type {name!r}")


def _type(checker: _Checker, types: Any, instance: Any, schema: Any) -> bool:
    names = [types] if isinstance(types, str) else types
    return any(_is_type(instance, name) for name in names)


def _properties(checker: _Checker, properties: Any, instance: Any, schema: Any) -> bool:
    if not isinstance(instance, dict):
        return True
    return all(
        checker.valid(instance[name], subschema)
        for name, subschema in properties.items()
        if name in instance
    )


def _additional_properties(checker: _Checker, extra: Any, instance: Any, schema: Any) -> bool:
    if not isinstance(instance, dict):
        return True
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [
        name
        for name in instance
        if name not in known and not any(re.search(p, name) for p in patterns)
    ]
    if isinstance(extra, Mapping):
        return all(checker.valid(instance[name], extra) for name in extras)
    return bool(extra) or not extras


def _pattern_properties(checker: _Checker, patterns: Any, instance: Any, schema: Any) -> bool:
    if not isinstance(instance, dict):
        return True
    return all(
        checker.valid(value, subschema)
        for pattern, subschema in patterns.items()
        for name, value in instance.items()
        if re.search(pattern, name)
    )


def _required(checker: _Checker, names: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, dict) or all(name in instance for name in names)


def _property_names(checker: _Checker, names: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, dict) or all(checker.valid(name, names) for name in instance)


def _items(checker: _Checker, items: Any, instance: Any, schema: Any) -> bool:
    # `prefixItems` is not implemented, so it never reaches here alongside `items`.
    if not isinstance(instance, list):
        return True
    return all(checker.valid(item, items) for item in instance)


def _min_items(checker: _Checker, least: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, list) or len(instance) >= least


def _min_properties(checker: _Checker, least: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, dict) or len(instance) >= least


def _max_items(checker: _Checker, most: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, list) or len(instance) <= most


def _min_length(checker: _Checker, least: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, str) or len(instance) >= least


def _max_length(checker: _Checker, most: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, str) or len(instance) <= most


def _pattern(checker: _Checker, pattern: Any, instance: Any, schema: Any) -> bool:
    return not isinstance(instance, str) or re.search(pattern, instance) is not None


def _number(compare: Callable[[Any, Any], bool]) -> Callable[[_Checker, Any, Any, Any], bool]:
    """A bound on numbers, written as jsonschema fails it (`not value < bound` is not
    `value >= bound` for NaN, which YAML's `.nan` produces)."""

    def check(checker: _Checker, bound: Any, instance: Any, schema: Any) -> bool:
        return not _is_type(instance, "number") or compare(instance, bound)

    return check


def _enum(checker: _Checker, values: Any, instance: Any, schema: Any) -> bool:
    return any(_equal(value, instance) for value in values)


def _const(checker: _Checker, value: Any, instance: Any, schema: Any) -> bool:
    return _equal(instance, value)


def _ref(checker: _Checker, reference: Any, instance: Any, schema: Any) -> bool:
    return checker.valid(instance, checker.resolve(reference))


def _all_of(checker: _Checker, schemas: Any, instance: Any, schema: Any) -> bool:
    return all(checker.valid(instance, each) for each in schemas)


def _any_of(checker: _Checker, schemas: Any, instance: Any, schema: Any) -> bool:
    return any(checker.valid(instance, each) for each in schemas)


def _one_of(checker: _Checker, schemas: Any, instance: Any, schema: Any) -> bool:
    return sum(checker.valid(instance, each) for each in schemas) == 1


def _not(checker: _Checker, negated: Any, instance: Any, schema: Any) -> bool:
    return not checker.valid(instance, negated)


def _if(checker: _Checker, condition: Any, instance: Any, schema: Any) -> bool:
    if checker.valid(instance, condition):
        return "then" not in schema or checker.valid(instance, schema["then"])
    return "else" not in schema or checker.valid(instance, schema["else"])


def _then_else(checker: _Checker, branch: Any, instance: Any, schema: Any) -> bool:
    return True  # applied by `if`, and ignored without one, as jsonschema does


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's `equal`: `True` is not `1`, also inside lists and objects."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and _equal(value, two[key]) for key, value in one.items()
        )
    return bool(_unbool(one) == _unbool(two))


_TRUE, _FALSE = object(), object()


def _unbool(value: Any) -> Any:
    return _TRUE if value is True else _FALSE if value is False else value


_KEYWORDS: dict[str, Callable[[_Checker, Any, Any, Any], bool]] = {
    "$ref": _ref,
    "additionalProperties": _additional_properties,
    "allOf": _all_of,
    "anyOf": _any_of,
    "const": _const,
    "else": _then_else,
    "enum": _enum,
    "exclusiveMaximum": _number(lambda value, bound: not value >= bound),
    "exclusiveMinimum": _number(lambda value, bound: not value <= bound),
    "if": _if,
    "items": _items,
    "maxItems": _max_items,
    "maxLength": _max_length,
    "maximum": _number(lambda value, bound: not value > bound),
    "minItems": _min_items,
    "minLength": _min_length,
    "minProperties": _min_properties,
    "minimum": _number(lambda value, bound: not value < bound),
    "not": _not,
    "oneOf": _one_of,
    "pattern": _pattern,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "propertyNames": _property_names,
    "required": _required,
    "then": _then_else,
    "type": _type,
}
