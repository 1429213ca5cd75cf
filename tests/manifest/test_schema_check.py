"""`conforms` against jsonschema: the same verdict, or none at all (issue 12, start-up).

`schema_issues` skips jsonschema when `conforms` says a document is valid, so one
wrong True would let an invalid manifest through. Every verdict here is compared with
`Draft202012Validator.is_valid` on the same data: the corpus and the examples, then
documents made from them by replacing, adding and removing values at random places
(with the values YAML produces: `1.0`, `True`, NaN, empty strings, lists, mappings),
then small schemas for the semantics that are easy to get wrong.
"""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from assembler.manifest.schema import schema
from assembler.manifest.schema_check import conforms
from assembler.manifest.yaml_source import load_yaml_file

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "corpus"
DOCUMENTS = sorted(
    [
        *(REPO / "agents").glob("*.yaml"),
        *CORPUS.glob("*/*.yaml"),
        *CORPUS.glob("*/*/agent.yaml"),
    ]
)
REFERENCE = Draft202012Validator(schema())


def _data(path: Path) -> Any:
    try:
        return load_yaml_file(path, path.name).data
    except Exception:
        return None


LOADED = [(path, _data(path)) for path in DOCUMENTS]
LOADED = [(path, data) for path, data in LOADED if data is not None]


def test_the_corpus_is_loaded() -> None:
    assert len(LOADED) >= 40


@pytest.mark.parametrize(
    ("path", "data"), LOADED, ids=[str(p.relative_to(REPO)) for p, _ in LOADED]
)
def test_every_corpus_document_gets_jsonschemas_verdict(path: Path, data: Any) -> None:
    # The published schema uses only implemented keywords: an answer, never None.
    assert conforms(data, schema()) is REFERENCE.is_valid(data)


VALUES = st.one_of(
    st.sampled_from(
        [None, True, False, 0, 1, -1, 1.0, 2.5, math.nan, math.inf, "", "x", "coding",
         "read", "openai:gpt-4o", "tools.x:f", "a" * 300, [], {}, ["coding"], {"a": 1},
         [{"builtin": "coding"}], {"python": "m:f"}, 10**20]
    ),
    st.text(max_size=12),
    st.integers(-5, 100_000),
)  # fmt: skip
KEYS = st.sampled_from(
    ["version", "name", "identity", "model", "tools", "sets", "builtin", "allow", "python",
     "mcp", "command", "url", "memory", "store", "limits", "max_turns", "prompt", "tools",
     "template", "file", "extensions", "path", "options", "skills", "x", "", "1"]
)  # fmt: skip


def _places(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _places(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _places(value, (*at, index))
    return found


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _value(draw: st.DrawFn) -> Any:
    return copy.deepcopy(draw(VALUES))  # the sampled lists and mappings are shared


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    valid = [data for _, data in LOADED if REFERENCE.is_valid(data)]
    document = copy.deepcopy(draw(st.sampled_from(valid)))
    for _ in range(draw(st.integers(1, 3))):
        places = _places(document)
        path = draw(st.sampled_from(places))
        operation = draw(st.sampled_from(["replace", "add", "remove", "wrap"]))
        if not path:
            if operation == "replace":
                document = _value(draw)
            continue
        parent, last = _at(document, path[:-1]), path[-1]
        if operation == "replace":
            parent[last] = _value(draw)
        elif operation == "wrap":
            parent[last] = [parent[last]]
        elif operation == "remove":
            del parent[last]
        else:
            target = _at(document, path)
            if isinstance(target, dict):
                target[draw(KEYS)] = _value(draw)
            elif isinstance(target, list):
                target.append(_value(draw))
    return document


@settings(
    max_examples=600, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(mutated())
def test_mutated_documents_get_jsonschemas_verdict(document: Any) -> None:
    assert conforms(document, schema()) is REFERENCE.is_valid(document)


# -- the semantics that are easy to get wrong, on small schemas ------------------------


def _both(instance: Any, small: dict[str, Any]) -> tuple[bool | None, bool]:
    return conforms(instance, small), Draft202012Validator(small).is_valid(instance)


@pytest.mark.parametrize(
    ("instance", "small"),
    [
        (True, {"enum": [1, "x"]}),  # True is not 1
        (1, {"const": True}),
        ([1, [False]], {"const": [True, [0]]}),
        ({"a": 1}, {"const": {"a": 1.0}}),
        (1.0, {"type": "integer"}),  # a float without fraction is an integer
        (True, {"type": "integer"}),
        (True, {"type": "number"}),
        (math.nan, {"minimum": 1}),  # NaN is not below the minimum
        (math.nan, {"maximum": 1, "exclusiveMinimum": 2}),
        (3, {"oneOf": [{"type": "integer"}, {"minimum": 1}]}),  # valid under both
        (3, {"oneOf": [{"type": "integer"}, {"type": "string"}]}),
        ("x", {"if": {"type": "string"}, "then": {"minLength": 2}, "else": False}),
        (5, {"if": {"type": "string"}, "then": False, "else": {"maximum": 4}}),
        (5, {"then": False}),  # `then` without `if` is ignored
        ({"b": 1}, {"properties": {"a": False}, "additionalProperties": False}),
        ({1: "x"}, {"propertyNames": {"type": "string"}}),
        ({1: "x"}, {"required": ["1"]}),
        (["a", 1], {"items": {"type": "string"}, "minItems": 2}),
        ("ab", {"pattern": "b"}),  # a search, not a match
        ("ab", {"pattern": "^b"}),
        ("\u00e9\u00e9", {"maxLength": 2}),  # code points, not bytes
        ({"a": {"a": 1}}, {"$ref": "#/$defs/n", "$defs": {"n": {"properties": {"a": {"$ref": "#/$defs/n"}}, "type": ["object", "integer"]}}}),
        (4, {"not": {"maximum": 3}, "allOf": [{"minimum": 4}], "anyOf": [False, True]}),
        # `patternProperties` (a search) decides what `additionalProperties` sees
        ({"xa": 1}, {"additionalProperties": False, "patternProperties": {"^x": True}}),
        ({"ax": 1}, {"additionalProperties": False, "patternProperties": {"x": True}}),
        ({"ya": 1}, {"additionalProperties": False, "patternProperties": {"^x": True}}),
        ({"xa": 1, "b": "s"}, {"properties": {"b": {"type": "string"}}, "patternProperties": {"^x": {"type": "string"}}}),
        ({"xb": 1}, {"properties": {"xb": {"type": "integer"}}, "patternProperties": {"^x": {"type": "string"}}}),
        ({"x1": 1}, {"patternProperties": {"^x": {"minimum": 0}, "1$": {"maximum": 0}}}),
    ],
)  # fmt: skip
def test_small_schemas_get_jsonschemas_verdict(instance: Any, small: dict[str, Any]) -> None:
    ours, reference = _both(instance, small)
    assert ours is reference


@pytest.mark.parametrize(
    ("instance", "small"),
    [
        # A keyword it does not know, even after a keyword that fails: its siblings may
        # depend on it (`unevaluatedProperties` depends on what the others evaluated).
        ({"xa": 1}, {"unevaluatedProperties": False, "patternProperties": {"^x": True}}),
        ([1], {"items": {"type": "string"}, "prefixItems": [True]}),
        ("x", {"format": "email"}),
        ({"a": 1}, {"properties": {"a": {"$id": "other", "type": "string"}}}),
        (1, {"$ref": "other.json#/a"}),
        ({1, 2}, {"type": "array"}),  # a value YAML does not produce
        (b"x", {"type": "string"}),
        (1, {"type": "decimal"}),
    ],
)
def test_what_it_does_not_implement_is_left_to_jsonschema(
    instance: Any, small: dict[str, Any]
) -> None:
    assert conforms(instance, small) is None


def test_a_valid_manifest_is_validated_without_importing_jsonschema(tmp_path: Path) -> None:
    probe = (
        "import sys; from pathlib import Path; "
        "from assembler.validation.validator import validate_file; "
        "report = validate_file(Path(sys.argv[1]), env={}); "
        "print(len(report.issues), 'jsonschema' in sys.modules)"
    )
    valid, invalid = tmp_path / "valid.yaml", tmp_path / "invalid.yaml"
    valid.write_text("version: 1\nname: ok\nidentity: x\ntools:\n  sets: []\n")
    invalid.write_text("version: 1\nname: ok\nidentity: x\ntools:\n  sets: 3\n")
    for manifest, expected in ((valid, "0 False"), (invalid, "1 True")):
        done = subprocess.run(
            [sys.executable, "-c", probe, str(manifest)],
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        )
        assert done.stdout.split() == expected.split()
