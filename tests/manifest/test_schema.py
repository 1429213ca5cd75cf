"""The published JSON Schema: its text, its own validity, its documentation, the
messages built from it, and `${VAR}` interpolation where it allows it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble
from jsonschema import Draft202012Validator

from assembler.errors import ManifestError
from assembler.manifest import schema as schema_module
from assembler.manifest.interpolate import INTERPOLATED_FIELDS, interpolate
from assembler.manifest.loader import parse_manifest
from assembler.manifest.model import MCPToolSet
from assembler.manifest.schema import schema, schema_issues, schema_text
from assembler.manifest.yaml_source import load_yaml_text
from assembler.validation.load import load_manifest
from assembler.validation.validator import find_manifests, validate_file

REPO = Path(__file__).resolve().parents[2]
PACKAGE_SCHEMA = REPO / "assembler" / "schemas" / "agent.schema.json"
PUBLISHED_SCHEMA = REPO / "schemas" / "agent.schema.json"
SCHEMA_LINE = "# yaml-language-server: $schema="


def _walk(node: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema with its JSON pointer, including `$defs`."""
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            if key in {"examples", "default", "const", "enum", "x-messages"}:
                continue  # values, not subschemas
            if key in {"properties", "patternProperties", "$defs"} and isinstance(value, dict):
                # A map of names to subschemas (a property may be named `examples`).
                for name, sub in value.items():
                    yield from _walk(sub, f"{pointer}/{key}/{name}")
                continue
            yield from _walk(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{pointer}/{index}")


# --- the schema itself ----------------------------------------------------------------


def test_assemble_schema_prints_exactly_the_schema_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome = assemble(capsys, "schema")
    assert outcome.code == 0
    assert outcome.out == PACKAGE_SCHEMA.read_text("utf-8")
    assert outcome.err == ""


def test_the_published_schema_is_the_package_schema() -> None:
    assert PUBLISHED_SCHEMA.read_bytes() == PACKAGE_SCHEMA.read_bytes()
    assert schema_text() == PACKAGE_SCHEMA.read_text("utf-8")


def test_the_schema_is_valid_draft_2020_12() -> None:
    document = json.loads(PACKAGE_SCHEMA.read_text("utf-8"))
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(document)


def test_the_validator_is_compiled_once() -> None:
    assert schema_module._validator() is schema_module._validator()
    assert schema() is schema()


def test_every_property_has_a_description() -> None:
    missing = [
        f"{pointer}/properties/{name}"
        for pointer, node in _walk(schema())
        for name, sub in (node.get("properties") or {}).items()
        if isinstance(sub, dict) and "description" not in sub and "$ref" not in sub
    ]
    assert missing == []


def test_every_definition_has_a_description() -> None:
    """A `$ref`-only property shows its definition's description in editors."""
    assert [name for name, node in schema()["$defs"].items() if "description" not in node] == []


def _examples() -> list[tuple[str, Any]]:
    return [
        (f"{pointer}[{index}]", example)
        for pointer, node in _walk(schema())
        for index, example in enumerate(node.get("examples", ()))
    ]


@pytest.mark.parametrize(("pointer", "example"), _examples(), ids=lambda v: str(v)[:60])
def test_every_example_validates_against_its_own_subschema(pointer: str, example: Any) -> None:
    location = pointer.rsplit("[", 1)[0]
    subschema: Any = schema()
    for part in location.removeprefix("#").strip("/").split("/"):
        if part:
            subschema = subschema[int(part)] if isinstance(subschema, list) else subschema[part]
    # `evolve` keeps the root's resolver, so `#/$defs/...` references still resolve.
    validator = Draft202012Validator(schema()).evolve(schema=subschema)
    assert [e.message for e in validator.iter_errors(example)] == []


def test_there_are_examples_for_the_main_fields() -> None:
    pointers = {pointer.rsplit("[", 1)[0] for pointer, _ in _examples()}
    for field in ("name", "model", "workspace", "skills", "context_files"):
        assert f"#/properties/{field}" in pointers
    for definition in ("builtinSet", "pythonSet", "mcpSet", "mcpServer", "extension"):
        assert f"#/$defs/{definition}" in pointers


def test_x_interpolate_annotations_equal_the_interpolated_fields() -> None:
    annotated = set()
    for pointer, node in _walk(schema()):
        if node.get("x-interpolate"):
            parts = pointer.split(
                "/"
            )  # #/$defs/<owner>/properties/<field>, or #/properties/<field>
            assert parts[-2] == "properties", pointer
            annotated.add(f"{parts[2]}.{parts[-1]}" if parts[1] == "$defs" else parts[-1])
    assert annotated == set(INTERPOLATED_FIELDS)


# --- the example manifests ----------------------------------------------------------


def _example_manifests() -> list[Path]:
    found, issues = find_manifests([REPO / "agents"])
    assert issues == []
    return found


def test_the_examples_are_found_and_the_replay_script_is_not_a_manifest() -> None:
    names = {path.name for path in _example_manifests()}
    assert "shipping-fixer.yaml" in names
    assert "shipping-fixer.script.yaml" not in names


@pytest.mark.parametrize("manifest", _example_manifests(), ids=lambda p: p.name)
def test_every_example_declares_the_schema_for_editors(manifest: Path) -> None:
    first = manifest.read_text("utf-8").splitlines()[0]
    assert first.startswith(SCHEMA_LINE)
    target = (manifest.parent / first.removeprefix(SCHEMA_LINE).strip()).resolve()
    assert target == PACKAGE_SCHEMA.resolve()


def test_assemble_validate_agents_is_clean(
    capsys: pytest.CaptureFixture[str], shipping: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(shipping)
    # `everything.yaml` runs `mcp-server-time`, installed beside this Python (the test
    # extra); an unactivated virtual environment does not put it on PATH
    scripts = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    outcome = assemble(capsys, "validate", "agents/")
    assert outcome.code == 0, outcome.out
    count = len(_example_manifests())
    assert outcome.out == f"{count} {'manifest' if count == 1 else 'manifests'} valid\n"


# --- messages -----------------------------------------------------------------------


def _messages(text: str) -> list[str]:
    document = load_yaml_text(text, "m.yaml")
    return [issue.format() for issue in schema_issues(document.data, document.source)]


BASE = "version: 1\nname: demo\nidentity: x\n"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "description: no\n",
            "m.yaml:4:14: error: expected a string, got a boolean (YAML reads the unquoted `no` "
            'as false; write "no" if you meant text) [description]',
        ),
        (
            "description:\n",
            "m.yaml:4:13: error: expected a string, got null (an empty value) [description]",
        ),
        (
            "idenity: y\n",
            "m.yaml:4:1: error: unknown key `idenity`; did you mean `identity`? [idenity]",
        ),
        (
            "tools: {sets: [{builtin: coding, alow: [read]}]}\n",
            "m.yaml:4:34: error: unknown key `alow`; did you mean `allow`? [tools.sets[0].alow]",
        ),
        (
            "memory: {selection: {strategy: keywords}}\n",
            'm.yaml:4:32: error: "keywords" is not one of `all`, `keyword`, `model`, `none`; '
            "did you mean `keyword`? [memory.selection.strategy]",
        ),
        (
            "limits: {max_turns: yes}\n",
            "m.yaml:4:21: error: expected an integer, got a boolean "
            "(YAML reads the unquoted `yes` as true) [limits.max_turns]",
        ),
        (
            "limits: {tool_timeout: 0}\n",
            "m.yaml:4:24: error: must be greater than 0, got 0 [limits.tool_timeout]",
        ),
        (
            "tools: {servers: {'my server': {command: sh}}}\n",
            "m.yaml:4:19: error: a server name is letters, digits, `.`, `_` and `-`, starting "
            "with a letter or digit [tools.servers['my server']]",
        ),
        (
            "extensions: [guard.py]\n",
            "m.yaml:4:14: error: expected a mapping, got a string [extensions[0]]",
        ),
        (
            "model: {provider: openai, base_url: 8080}\n",
            "m.yaml:4:37: error: expected a string, got an integer [model.base_url]",
        ),
    ],
)
def test_one_message(extra: str, expected: str) -> None:
    assert _messages(BASE + extra) == [expected]


def test_every_bad_item_of_a_list_is_reported() -> None:
    """anyOf(tool, list of tools): both bad items of the list, not only the first."""
    assert _messages(BASE + "tools: {sets: [{python: ['a.b', {function: 'a:b', nam: x}]}]}\n") == [
        "m.yaml:4:26: error: a Python tool is `package.module:function` [tools.sets[0].python[0]]",
        "m.yaml:4:51: error: unknown key `nam`; did you mean `name`? [tools.sets[0].python[1].nam]",
    ]


def test_each_missing_required_key_is_reported() -> None:
    assert _messages("description: x\n") == [
        "m.yaml:1:1: error: missing required key `identity`",
        "m.yaml:1:1: error: missing required key `name`",
        "m.yaml:1:1: error: missing required key `version`",
    ]


def test_a_clean_manifest_has_no_schema_issues() -> None:
    assert _messages(BASE) == []


# --- `${VAR}` interpolation ---------------------------------------------------------


INTERPOLATING = """\
version: 1
name: env
identity: "Literal ${HOME} and $$ stay as written here."
model:
  provider: openai
  name: gpt
  base_url: "http://${HOST}:${PORT:-8080}/v1"
tools:
  servers:
    stdio:
      command: "${NOT_INTERPOLATED}"
      args: ["--token", "${TOKEN}", "$$literal", "${EMPTY:-}"]
      env: {KEY: "${TOKEN}", PRICE: "$$5"}
    http:
      url: "https://${HOST}/mcp"
      headers: {Authorization: "Bearer ${TOKEN}"}
  sets: [{mcp: stdio}, {mcp: http}]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text, "utf-8")
    return path


def test_interpolation_replaces_only_the_annotated_fields(tmp_path: Path) -> None:
    env = {"HOST": "example.com", "TOKEN": "t0k", "HOME": "/home/x", "NOT_INTERPOLATED": "no"}
    parsed = parse_manifest(_write(tmp_path, INTERPOLATING), env=env)
    assert parsed.issues == ()
    manifest = parsed.manifest
    assert manifest is not None
    assert manifest.identity == "Literal ${HOME} and $$ stay as written here."
    assert manifest.model is not None
    assert manifest.model.base_url == "http://example.com:8080/v1"
    stdio, http = manifest.tools.servers["stdio"], manifest.tools.servers["http"]
    assert stdio.command == "${NOT_INTERPOLATED}"
    assert stdio.args == ("--token", "t0k", "$literal", "")
    assert stdio.env == {"KEY": "t0k", "PRICE": "$5"}
    assert http.url == "https://example.com/mcp"
    assert http.headers == {"Authorization": "Bearer t0k"}
    assert [s.server.name for s in manifest.tools.sets if isinstance(s, MCPToolSet)] == [
        "stdio",
        "http",
    ]


def test_an_unset_variable_is_a_warning_for_validate(tmp_path: Path) -> None:
    path = _write(tmp_path, INTERPOLATING)
    report = validate_file(path, env={"HOST": "h"}, display="agent.yaml")
    unset = [i.format() for i in report.issues if "environment variable" in i.message]
    assert unset == [
        "agent.yaml:12:25: warning: environment variable `TOKEN` is not set; `assemble run` "
        "needs it [tools.servers.stdio.args[1]]",
        "agent.yaml:13:18: warning: environment variable `TOKEN` is not set; `assemble run` "
        "needs it [tools.servers.stdio.env.KEY]",
        "agent.yaml:16:32: warning: environment variable `TOKEN` is not set; `assemble run` "
        "needs it [tools.servers.http.headers.Authorization]",
    ]
    assert not report.has_errors


def test_an_unset_variable_is_an_error_for_load_manifest(tmp_path: Path) -> None:
    path = _write(tmp_path, INTERPOLATING)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, env={"TOKEN": "t"})
    errors = [(i.line, i.message, i.path) for i in caught.value.errors]
    assert errors == [
        (7, "environment variable `HOST` is not set", "model.base_url"),
        (15, "environment variable `HOST` is not set", "tools.servers.http.url"),
    ]


def test_load_manifest_with_every_variable_set(tmp_path: Path) -> None:
    path = _write(tmp_path, INTERPOLATING.replace('command: "${NOT_INTERPOLATED}"', "command: sh"))
    manifest = load_manifest(path, env={"HOST": "h", "TOKEN": "t"})
    assert manifest.model is not None and manifest.model.base_url == "http://h:8080/v1"


@pytest.mark.parametrize(
    ("text", "env", "expected", "missing"),
    [
        ("${A}", {"A": "1"}, "1", []),
        ("${A:-d}", {}, "d", []),
        ("${A:-d}", {"A": ""}, "", []),  # set but empty: the value, as in the shell's `-`
        ("${A:-}", {}, "", []),
        ("$$", {}, "$", []),
        ("$${A}", {"A": "1"}, "${A}", []),
        ("$A and ${ A }", {"A": "1"}, "$A and ${ A }", []),  # only ${NAME} is a reference
        ("${A}${B}", {}, "", ["A", "B"]),
        ("pre-${A}-post", {}, "pre--post", ["A"]),
    ],
)
def test_interpolate(text: str, env: dict[str, str], expected: str, missing: list[str]) -> None:
    seen: list[str] = []
    assert interpolate(text, env, seen.append) == expected
    assert seen == missing
