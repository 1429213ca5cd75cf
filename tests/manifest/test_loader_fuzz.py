"""Fuzzing the manifest loader: whatever the bytes, only `ManifestError` comes out.

Three sources of input: random bytes, random YAML-ish text built from a grammar of
YAML tokens (keys, `:`, `-`, flow brackets, anchors, aliases, tags, quotes, newlines,
indentation), and mutations of the real example manifests and the corpus cases.
Each goes through `load_yaml_text`, through `parse_manifest` (as a file) and through
`validate_file`, which must return a report or raise `ManifestError`, never anything
else: a traceback in `assemble validate` is a bug.

The example counts are small and the seed fixed (`derandomize`), so the whole file
runs in a few seconds and a failure reproduces; set `HYPOTHESIS_PROFILE=fuzz-long` to
search longer, with fresh randomness.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler.errors import ManifestError
from assembler.manifest.loader import parse_manifest
from assembler.manifest.yaml_source import decode_text, load_yaml_text
from assembler.validation.validator import validate_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "agents").glob("*.yaml"))
CORPUS = REPO / "tests" / "manifest" / "corpus"
# Text mutations start from the examples and from every corpus case too (issue 11,
# item 23); `tests/security/test_fuzz_manifests.py` mutates their structure as well.
SEEDS = [*EXAMPLES, *sorted(CORPUS.glob("*/*.yaml")), *sorted(CORPUS.glob("*/*/agent.yaml"))]

_LONG = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz-long"
FUZZ = settings(
    max_examples=2000 if _LONG else 150,
    derandomize=not _LONG,  # a fixed seed in the suite: a failure reproduces
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

KEYS = [
    "version", "name", "identity", "description", "context", "model", "workspace", "tools",
    "sets", "servers", "builtin", "python", "mcp", "allow", "prefix", "skills",
    "context_files", "memory", "extensions", "path", "module", "entry_point", "prompt",
    "template", "file", "limits", "max_turns", "command", "url", "args", "env", "<<", "on",
    "1", "true", "null", "",
]  # fmt: skip
SCALARS = [
    "1", "0x1F", "1e400", "-.inf", ".nan", "no", "yes", "~", "null", "2024-01-01",
    "2024-01-01T10:00:00Z", "coding", "read", "openai:gpt-4o-mini", "${HOME}", "$$",
    "tools.x:f", "x.py", "'quoted'", '"dq \\u00e9 \\x"', "|", ">", "|-", "'", '"', "9" * 450,
]  # fmt: skip
TOKENS = [
    *KEYS, *SCALARS, ":", ": ", "- ", "-", "[", "]", "{", "}", ",", "? ", "&a ", "*a", "&b ",
    "*b", "!tag ", "!!str ", "!!python/object:os.system ", "!!binary ", "!!set ", "!!omap ",
    "%YAML 1.1\n", "---\n", "...\n", "#", "\n", "\n  ", "\n    ", "\t", " ", "\r\n", "\ufeff",
    "\x85", "\u2028", "\x00", "\\",
]  # fmt: skip

yaml_ish = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)


def _mutations() -> st.SearchStrategy[str]:
    texts = [path.read_text("utf-8", "replace") for path in SEEDS]

    @st.composite
    def mutate(draw: st.DrawFn) -> str:
        text = draw(st.sampled_from(texts))
        for _ in range(draw(st.integers(1, 4))):
            if not text:
                break
            at = draw(st.integers(0, len(text) - 1))
            op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
            if op == "delete":
                end = at + draw(st.integers(1, 20))
                text = text[:at] + text[end:]
            elif op == "insert":
                text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
            elif op == "replace":
                text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at + 1 :]
            else:  # a line repeated: duplicate keys, broken indentation
                lines = text.splitlines(keepends=True)
                index = draw(st.integers(0, len(lines) - 1))
                lines.insert(index, lines[index])
                text = "".join(lines)
        return text

    return mutate()


def _load_text(text: str) -> None:
    try:
        load_yaml_text(text, "fuzz.yaml")
    except ManifestError as e:
        assert e.issues, "a ManifestError must carry at least one issue"


def _check_file(path: Path, raw: bytes) -> None:
    path.write_bytes(raw)
    try:
        parsed = parse_manifest(path, env={})
    except ManifestError as e:  # allowed, although parse_manifest collects issues
        assert e.issues
    else:
        assert parsed.has_errors or parsed.manifest is not None
    try:
        report = validate_file(path, env={})
    except ManifestError as e:
        assert e.issues
    else:
        for issue in report.issues:
            assert issue.message and issue.severity in ("error", "warning")


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(tmp_path: Path, raw: bytes) -> None:
    try:
        text = decode_text(raw, "fuzz.yaml")
    except ManifestError:
        text = None
    if text is not None:
        _load_text(text)
    _check_file(tmp_path / "bytes.yaml", raw)


@FUZZ
@given(yaml_ish)
def test_yaml_token_soup(tmp_path: Path, text: str) -> None:
    _load_text(text)
    _check_file(tmp_path / "soup.yaml", text.encode("utf-8", "surrogatepass"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(SCALARS + KEYS),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS), children, max_size=5)
    ),
    max_leaves=25,
)
manifest_shaped = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from([1, 2, "1", None]),
        "name": st.sampled_from(["demo", "bad name", "", 3]),
        "identity": st.sampled_from(["Use `patch`.", "call `x`", " ", None]),
        **{key: json_values for key in KEYS[3:20]},
    },
)


@FUZZ
@given(manifest_shaped)
def test_manifest_shaped_documents(tmp_path: Path, data: dict[str, object]) -> None:
    """Well-formed YAML with manifest keys and values of every type reaches the schema
    messages and the checks beyond the schema, which read the raw document."""
    text = yaml.safe_dump(data, allow_unicode=True)
    _load_text(text)
    _check_file(tmp_path / "shaped.yaml", text.encode("utf-8"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `agents/` and `examples/`, so mutated manifests resolve their relative
    paths (skills, workspace, extension files) as the originals do."""
    root = tmp_path_factory.mktemp("fuzz-project")
    for name in ("agents", "examples", "schemas"):
        shutil.copytree(
            REPO / name, root / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


@pytest.mark.skipif(not EXAMPLES, reason="no example manifests")
@FUZZ
@given(text=_mutations())
def test_mutated_examples(project: Path, text: str) -> None:
    _load_text(text)
    _check_file(project / "agents" / "mutated.yaml", text.encode("utf-8", "surrogatepass"))
