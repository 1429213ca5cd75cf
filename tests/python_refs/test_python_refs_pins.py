"""What finding Python code without importing it promises, pinned (found by mutation
testing: `python bench/mutation.py python_refs`, docs/testing.md).

The parse cache is what keeps `validate` and `render --dry-run` to one parse per file;
its bounds are what keep a project of thousands of modules from holding every syntax
tree at once (32 files and 2 MiB of source, the file in use always kept). An edited
file, or one parsed again, never counts twice against the budget.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from assembler.manifest.model import PythonToolSpec
from assembler.python_refs import ParsedSources, check_source, find_module_source
from assembler.tools.python.tools import load_python_tool, static_python_tool


def source(path: Path, size: int) -> Path:
    """A Python file of exactly `size` bytes (a comment, quick to parse)."""
    path.write_text("#" + "x" * (size - 2) + "\n", "utf-8")
    assert path.stat().st_size == size
    return path


def test_the_process_cache_keeps_the_thirty_two_files_used_last(tmp_path: Path) -> None:
    cache = ParsedSources()
    files = [source(tmp_path / f"m{i}.py", 10) for i in range(33)]
    for path in files[:32]:
        cache.get(path)
    cache.get(files[0])  # used again: now the most recent
    assert cache.parses == 32
    cache.get(files[32])  # one more pushes out the one used longest ago
    cache.get(files[0])
    assert cache.parses == 33
    cache.get(files[1])
    assert cache.parses == 34


def test_the_process_cache_keeps_two_mebibytes_of_source(tmp_path: Path) -> None:
    cache = ParsedSources()
    half = 1024 * 1024 + 500  # two of them: 1,000 bytes over 2 MiB
    first, second = source(tmp_path / "a.py", half), source(tmp_path / "b.py", half)
    cache.get(first)
    cache.get(second)
    cache.get(second)
    assert cache.parses == 2
    cache.get(first)
    assert cache.parses == 3


def test_a_budget_filled_exactly_keeps_everything(tmp_path: Path) -> None:
    cache = ParsedSources(max_files=10, max_bytes=90)
    small, large = source(tmp_path / "s.py", 30), source(tmp_path / "l.py", 60)
    cache.get(small)
    cache.get(large)
    cache.get(small)
    assert cache.parses == 2


def test_a_file_parsed_again_counts_once_against_the_budget(tmp_path: Path) -> None:
    cache = ParsedSources(max_files=10, max_bytes=90)
    small, large = source(tmp_path / "s.py", 30), source(tmp_path / "l.py", 60)
    cache.get(small)
    for letter in "abc":  # edited three times, the same size each time
        large.write_text("#" + letter * 58 + "\n", "utf-8")
        cache.get(large)
    assert cache.parses == 4
    cache.get(small)
    assert cache.parses == 4


def test_evicting_one_file_frees_its_bytes(tmp_path: Path) -> None:
    cache = ParsedSources(max_files=2, max_bytes=100)
    x, y, z = (source(tmp_path / f"{name}.py", 40) for name in "xyz")
    for path in (x, y, z):
        cache.get(path)
    cache.get(y)
    assert cache.parses == 3
    cache.get(x)
    assert cache.parses == 4


def test_clear_forgets_every_file_and_its_bytes(tmp_path: Path) -> None:
    cache = ParsedSources(max_files=10, max_bytes=90)
    small, large = source(tmp_path / "s.py", 30), source(tmp_path / "l.py", 60)
    cache.get(small)
    cache.get(large)
    cache.clear()
    cache.get(small)
    cache.get(large)
    assert cache.parses == 4
    cache.get(small)
    assert cache.parses == 4


def test_a_file_gone_before_it_is_parsed_says_which(tmp_path: Path) -> None:
    parsed = ParsedSources().get(tmp_path / "gone.py")
    assert parsed.tree is None
    assert parsed.error.startswith("cannot parse gone.py ([Errno 2] ")
    assert parsed.error.endswith(")")


def test_an_annotated_assignment_is_a_binding_too(tmp_path: Path) -> None:
    module = tmp_path / "annotated.py"
    module.write_text("handler: object = None\n\ndef handler():\n    pass\n", "utf-8")
    assert "assigned or imported" in check_source(module, "handler", "annotated").uncertain


def test_string_annotations_read_from_source_as_at_run_time(tmp_path: Path) -> None:
    """`validate` and `render --dry-run` read a tool's schema from its source; an
    annotation written as a string must give the schema the imported tool has."""
    (tmp_path / "quoted_tools.py").write_text(
        textwrap.dedent(
            '''\
            def f(count: "int", tags: "list[str] | None" = None) -> str:
                """Count things."""
                return ""
            '''
        ),
        "utf-8",
    )
    spec = PythonToolSpec("quoted_tools:f")
    static = static_python_tool(spec, [tmp_path])
    assert static.problems == ()
    try:
        loaded = load_python_tool(spec, [tmp_path])
    finally:
        sys.modules.pop("quoted_tools", None)
    assert static.parameters == loaded.parameters
    assert static.parameters["properties"]["count"] == {"type": "integer"}


def test_a_compiled_module_in_the_project_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Nothing can check what a `.pyc` does, so a project's compiled module is refused
    rather than trusted or run, and the message says so."""
    (tmp_path / "fastmod.pyc").write_bytes(b"\x00" * 16)
    path, problem = find_module_source("fastmod", [tmp_path])
    assert path is None
    assert problem == (
        "`fastmod` is fastmod.pyc, not Python source: a compiled or binary module "
        "in a project directory is refused, since nothing can check what it runs"
    )
