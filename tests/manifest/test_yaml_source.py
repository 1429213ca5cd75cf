"""Loading rules for manifest YAML (`assembler.manifest.yaml_source`).

Safe loading only, duplicate keys refused, timestamps kept as text, no custom tags,
aliases capped, size and number limits, UTF-8 only; and every value keeps the
line and column it came from. Each refusal is one `ManifestError` with one issue,
never a traceback.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from assembler.errors import Issue, ManifestError
from assembler.manifest.yaml_source import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    Mark,
    format_path,
    load_yaml_file,
    load_yaml_text,
    read_manifest_text,
)


def _load(text: str) -> object:
    return load_yaml_text(text, "m.yaml").data


def _refusal(text: str) -> Issue:
    with pytest.raises(ManifestError) as caught:
        load_yaml_text(text, "m.yaml")
    assert len(caught.value.issues) == 1, caught.value.issues
    return caught.value.issues[0]


def _file_refusal(path: Path) -> Issue:
    with pytest.raises(ManifestError) as caught:
        load_yaml_file(path, path.name)
    assert len(caught.value.issues) == 1, caught.value.issues
    return caught.value.issues[0]


# --- plain values --------------------------------------------------------------------


def test_plain_json_like_values() -> None:
    data = _load(
        "a: text\nb: 3\nc: 1.5\nd: true\ne: null\nf: [1, two]\ng: {h: i}\n"
        "j: 0x1F\nk: -.inf\nl: ''\n"
    )
    assert data == {
        "a": "text",
        "b": 3,
        "c": 1.5,
        "d": True,
        "e": None,
        "f": [1, "two"],
        "g": {"h": "i"},
        "j": 31,
        "k": float("-inf"),
        "l": "",
    }


def test_timestamps_stay_strings() -> None:
    data = _load(
        "context: {when: 2024-01-01, at: 2024-01-01T10:00:00Z, t: 2001-12-14 21:59:43.10 -5}"
    )
    assert data == {
        "context": {
            "when": "2024-01-01",
            "at": "2024-01-01T10:00:00Z",
            "t": "2001-12-14 21:59:43.10 -5",
        }
    }


def test_yaml_1_1_words_are_read_as_yaml_reads_them() -> None:
    """`no` stays False here: the loader does not reinterpret YAML; the schema's types
    catch it with a message (see test_schema.py)."""
    data = _load("a: no\nb: yes\nc: on\nd: off\ne: ~\nf: 1.10\ng: 'no'\nh: \"on\"\n")
    assert data == {
        "a": False,
        "b": True,
        "c": True,
        "d": False,
        "e": None,
        "f": 1.1,
        "g": "no",
        "h": "on",
    }


def test_plain_non_strings_remember_how_they_were_written() -> None:
    document = load_yaml_text("a: no\nb: 1.10\nc: text\nd: 'no'\n", "m.yaml")
    assert document.source.plain == {("a",): "no", ("b",): "1.10"}


def test_merge_keys_and_shared_aliases() -> None:
    data = _load("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\nd: *b\ne: [*b, *b]\n")
    assert isinstance(data, dict)
    assert data["c"] == {"x": 1, "y": 3}
    assert data["d"] is data["base"], "an alias is shared, not copied"
    assert data["e"][0] is data["base"]


def test_a_merge_key_needs_mappings() -> None:
    issue = _refusal("a: &a [1]\nb:\n  <<: *a\n")
    assert (issue.line, issue.column) == (3, 7)
    assert issue.message == "a merge key `<<` needs a mapping or a list of mappings"


def test_byte_order_mark_is_allowed(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: x\n")
    assert load_yaml_file(path).data == {"name": "x"}


# --- refusals: one issue each, with a position --------------------------------------


def test_duplicate_keys_are_errors_naming_both_lines() -> None:
    issue = _refusal("version: 1\ntools:\n  sets: [coding]\n  guidelines: []\n  sets: []\n")
    assert (issue.line, issue.column) == (5, 3)
    assert issue.message == (
        "duplicate key 'sets' (first defined at line 3); YAML would silently keep only the last one"
    )


def test_keys_equal_only_in_python_are_a_clash_not_a_duplicate() -> None:
    issue = _refusal("context:\n  1: a\n  true: b\n")
    assert (issue.line, issue.column) == (3, 3)
    assert (
        issue.message
        == "key `true` (read as True) clashes with the key 1 on line 2; quote the keys to keep both"
    )


def test_the_same_key_in_two_mappings_is_fine() -> None:
    assert _load("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}


@pytest.mark.parametrize(
    ("text", "tag", "position"),
    [
        (
            "identity: !!python/object/apply:os.system ['true']\n",
            "!!python/object/apply:os.system",
            (1, 11),
        ),
        ("a: !!python/name:os.system ''\n", "!!python/name:os.system", (1, 4)),
        ("a: !!python/object:object {}\n", "!!python/object:object", (1, 4)),
        ("a: !foo bar\n", "!foo", (1, 4)),
        ("a: !foo {b: 1}\n", "!foo", (1, 4)),
        ("a: !foo [1]\n", "!foo", (1, 4)),
        ("a: !!binary aGVsbG8=\n", "!!binary", (1, 4)),
        ("a: !!set {x}\n", "!!set", (1, 4)),
        ("a:\n  - !<tag:example.com,2024:thing> x\n", "tag:example.com,2024:thing", (2, 5)),
    ],
)
def test_custom_tags_are_refused(text: str, tag: str, position: tuple[int, int]) -> None:
    issue = _refusal(text)
    assert issue.message == f"custom tag {tag} is not allowed in a manifest"
    assert (issue.line, issue.column) == position


def test_standard_tags_are_allowed() -> None:
    assert _load("a: !!str 1\nb: !!int '2'\nc: !!map {d: !!seq [x]}\n") == {
        "a": "1",
        "b": 2,
        "c": {"d": ["x"]},
    }


def test_an_alias_bomb_is_refused_with_little_memory() -> None:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    text = "\n".join(lines) + "\n"  # 9**9 = 387 million strings when expanded
    tracemalloc.start()
    try:
        with pytest.raises(ManifestError) as caught:
            load_yaml_text(text, "bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024 * 1024, f"peak {peak:,} bytes"
    (issue,) = caught.value.issues
    assert "alias bomb" in issue.message
    assert issue.message.startswith("document expands to more than 100,000 values")
    assert issue.line == 6


def test_an_unknown_alias_is_an_error() -> None:
    issue = _refusal("a: *nowhere\n")
    assert issue.message == "unknown alias *nowhere"
    assert (issue.line, issue.column) == (1, 4)


def test_alias_keys_and_collection_keys_are_refused() -> None:
    message = "mapping keys must be plain scalars, not collections or aliases"
    assert _refusal("? [a, b]\n: 1\n").message == message
    assert _refusal("k: &k x\n*k : 1\n").message == message


def test_deep_nesting_is_an_error_not_a_recursion_error() -> None:
    # libyaml itself stops ten thousand `[` at its own flow-level limit ...
    issue = _refusal("[" * 10_000)
    assert (
        issue.message
        == "YAML syntax error: while increasing flow level exceeded maximum nesting depth"
    )
    # ... and the builder stops block nesting, and flow nesting below libyaml's limit.
    assert _refusal("- " * 10_000 + "x").message == f"nesting deeper than {MAX_DEPTH} levels"
    issue = _refusal("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n")
    assert issue.message == f"nesting deeper than {MAX_DEPTH} levels"
    assert (issue.line, issue.column) == (1, 4 + MAX_DEPTH)


def test_an_integer_of_5000_digits_is_one_clear_error() -> None:
    issue = _refusal("limits:\n  max_turns: " + "7" * 5000 + "\n")
    assert (issue.line, issue.column) == (2, 14)
    assert issue.message == (
        "number literal of 5,000 characters is too long (at most 400); "
        "quote it if it is meant as text"
    )


def test_a_long_number_in_quotes_is_text() -> None:
    assert _load(f"a: '{'7' * 5000}'\n") == {"a": "7" * 5000}


def test_a_nul_escape_is_refused() -> None:
    issue = _refusal('workspace: "ws\\0"\n')
    assert (issue.line, issue.column) == (1, 12)
    assert issue.message == "a NUL character (`\\0`) is not allowed in a manifest"


def test_more_than_one_document_is_an_error() -> None:
    issue = _refusal("a: 1\n---\nb: 2\n")
    assert (issue.line, issue.column) == (2, 1)
    assert issue.message == "more than one YAML document; a manifest is one document"


def test_a_syntax_error_has_a_position() -> None:
    issue = _refusal("tools:\n  sets:\n    - coding\n   - readonly\n")
    assert (issue.line, issue.column) == (4, 4)
    assert issue.message.startswith("YAML syntax error: ")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "   \n# x\n"])
def test_an_empty_file_is_one_error(text: str) -> None:
    issue = _refusal(text)
    assert issue.message == "empty file; a manifest needs at least `version`, `name` and `identity`"
    assert (issue.line, issue.column) == (0, 0)


# --- reading files -------------------------------------------------------------------


def test_a_file_over_one_mib_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: 1\n" + b"#" * MAX_FILE_BYTES)
    issue = _file_refusal(path)
    assert issue.message == f"file is {MAX_FILE_BYTES + 5:,} bytes; manifests are limited to 1 MiB"
    assert issue.file == "big.yaml"


def test_a_file_of_exactly_one_mib_is_read(tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    head = b"a: 1\n#"
    path.write_bytes(head + b"x" * (MAX_FILE_BYTES - len(head)))
    assert path.stat().st_size == MAX_FILE_BYTES
    assert load_yaml_file(path).data == {"a": 1}


def test_invalid_utf8_names_the_position_of_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("version: 1\nname: caf\xe9\n".encode("latin-1"))
    issue = _file_refusal(path)
    assert (issue.line, issue.column) == (2, 10)
    assert issue.message == "invalid UTF-8 (byte 0xe9); save the file as UTF-8"


def test_a_binary_file_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "image.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    issue = _file_refusal(path)
    assert issue.message == "binary file (contains a NUL byte); expected UTF-8 YAML"
    assert (issue.line, issue.column) == (3, 1)  # the first NUL, after two line breaks


def test_a_utf16_file_is_reported_as_binary(tmp_path: Path) -> None:
    path = tmp_path / "utf16.yaml"
    path.write_bytes("name: x\n".encode("utf-16"))
    assert _file_refusal(path).message.startswith("binary file")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert _file_refusal(tmp_path / "nope.yaml").message == "file not found"
    assert _file_refusal(tmp_path).message == "is a directory, not a manifest file"


def test_read_manifest_text_strips_the_bom_only(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: \xc3\xa9\n")
    assert read_manifest_text(path) == "a: \u00e9\n"


# --- positions ----------------------------------------------------------------------


POSITIONED = """\
version: 1
tools:
  sets:
    - builtin: coding
      allow: [read, edit]
identity: |
  You fix bugs.
  Use `edit`.
quoted: "say `read`"
plain: say `read`
nested:
  - >
    folded `bash`
"""


def test_keys_and_values_keep_line_and_column() -> None:
    source = load_yaml_text(POSITIONED, "m.yaml").source
    assert source.keys[("tools",)] == Mark(2, 1)
    assert source.values[("tools", "sets", 0)] == Mark(4, 7)
    assert source.keys[("tools", "sets", 0, "allow")] == Mark(5, 7)
    assert source.values[("tools", "sets", 0, "allow", 1)] == Mark(5, 21)
    assert source.locate(("tools", "sets", 0, "allow", 9)) == Mark(5, 14)  # nearest ancestor
    assert source.locate(("nowhere",)) == Mark(1, 1)


def test_issue_positions_point_at_the_key_or_the_value() -> None:
    source = load_yaml_text(POSITIONED, "m.yaml").source
    at_value = source.issue(("tools", "sets", 0, "allow"), "bad")
    at_key = source.issue(("tools", "sets", 0, "allow"), "bad", key=True, severity="warning")
    assert at_value.format() == "m.yaml:5:14: error: bad [tools.sets[0].allow]"
    assert at_key.format() == "m.yaml:5:7: warning: bad [tools.sets[0].allow]"


@pytest.mark.parametrize(
    ("path", "line", "column", "expected"),
    [
        (("identity",), 1, 1, Mark(7, 3)),  # literal block: the text starts a line below
        (("identity",), 2, 5, Mark(8, 7)),  # `edit` on the block's second line
        (("quoted",), 1, 5, Mark(9, 14)),  # counted after the opening quote
        (("plain",), 1, 5, Mark(10, 12)),
        (("nested", 0), 1, 8, Mark(13, 12)),  # a block scalar in a list, deeper indented
    ],
)
def test_positions_inside_strings(
    path: tuple[str | int, ...], line: int, column: int, expected: Mark
) -> None:
    source = load_yaml_text(POSITIONED, "m.yaml").source
    assert source.text_position(path, line, column) == expected


def test_line_offset_shifts_every_position() -> None:
    document = load_yaml_text("name: x\ndescription: |\n  use `y`\n", "SKILL.md", line_offset=1)
    assert document.source.values[("name",)] == Mark(2, 7)
    assert document.source.text_position(("description",), 1, 5) == Mark(4, 7)
    issue = _refusal_with_offset("a: 1\na: 2\n")
    assert (issue.line, issue.column) == (3, 1)


def _refusal_with_offset(text: str) -> Issue:
    with pytest.raises(ManifestError) as caught:
        load_yaml_text(text, "SKILL.md", line_offset=1)
    return caught.value.issues[0]


def test_format_path() -> None:
    assert format_path(()) == ""
    assert format_path(("tools", "sets", 0, "allow")) == "tools.sets[0].allow"
    assert format_path(("tools", "servers", "my-server", "url")) == "tools.servers.my-server.url"
    assert format_path(("context", "a b", 2)) == "context['a b'][2]"


def test_a_duplicate_key_is_collected_and_reading_goes_on() -> None:
    """With `collect`, the first value stays, the duplicate is an issue, and what
    follows is read (so `validate` reports the file's other errors in the same run)."""
    text = "a: 1\nb: {c: 2}\na: 3\nd: [x]\n"
    document = load_yaml_text(text, "f.yaml", collect=True)
    assert document.data == {"a": 1, "b": {"c": 2}, "d": ["x"]}
    (issue,) = document.issues
    assert issue.format() == (
        "f.yaml:3:1: error: duplicate key 'a' (first defined at line 1); YAML would silently "
        "keep only the last one [a]"
    )
    with pytest.raises(ManifestError) as caught:  # without `collect` (a SKILL.md): raised
        load_yaml_text(text, "f.yaml")
    assert caught.value.issues == document.issues
