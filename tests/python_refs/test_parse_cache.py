"""Each Python file is parsed once, and never used after it changed (issue 12, "Scale").

`validate` and `render --dry-run` used to parse a tool module three times per tool
(validation, the static check, the schema): 300 tools in one module were 900 parses.
These tests count real calls to `ast.parse` on real files.
"""

from __future__ import annotations

import ast
import os
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assembler.agent.preview import preview_dry_run
from assembler.python_refs import ParsedSources, check_source, resolve_function, source_cache
from assembler.validation.load import load_manifest
from assembler.validation.validator import validate_file

TOOLS = 30


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often `ast.parse` ran, by file name; the process-wide cache starts empty."""
    counts: Counter[str] = Counter()
    real = ast.parse

    def counting(source: Any, filename: str = "<unknown>", *args: Any, **kwargs: Any) -> Any:
        counts[Path(filename).name] += 1
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    source_cache().clear()
    return counts


def _project(root: Path, tools: int) -> Path:
    (root / "tools").mkdir()
    (root / "tools" / "__init__.py").write_text("")
    (root / "tools" / "many.py").write_text(
        "from typing import Literal\n\n"
        + "".join(
            f'def tool_{i}(path: str, mode: Literal["a", "b"] = "a") -> str:\n'
            f'    """Tool {i}."""\n    return path\n\n\n'
            for i in range(tools)
        )
    )
    (root / "extension.py").write_text("def setup(api):\n    pass\n")
    entries = "".join(f"        - tools.many:tool_{i}\n" for i in range(tools))
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: many\nidentity: x\nmodel: openai:gpt-4o\n"
        f"tools:\n  sets:\n    - python:\n{entries}"
        "extensions:\n  - path: extension.py\n"
    )
    return manifest


def test_validate_and_dry_run_parse_each_file_once(tmp_path: Path, parses: Counter[str]) -> None:
    manifest = _project(tmp_path, TOOLS)
    assert not validate_file(manifest, env={}).issues
    preview = preview_dry_run(load_manifest(manifest, env={}))
    assert [t.name for t in preview.tools] == [f"tool_{i}" for i in range(TOOLS)]
    assert preview.tools[0].parameters["properties"]["mode"] == {
        "enum": ["a", "b"],
        "type": "string",
        "default": "a",
    }
    assert parses["many.py"] == 1
    assert parses["extension.py"] == 1


def test_an_edited_file_is_parsed_again(tmp_path: Path, parses: Counter[str]) -> None:
    module = tmp_path / "mod.py"
    module.write_text("def first():\n    pass\n")
    assert check_source(module, "first", "mod").problem == ""
    before = module.stat()
    module.write_text("def other():\n    pass\n")  # same size, and the same mtime below
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert module.stat().st_mtime_ns == before.st_mtime_ns
    assert check_source(module, "first", "mod").problem == "`mod` has no top-level function `first`"
    assert check_source(module, "other", "mod").problem == ""
    assert parses["mod.py"] == 2


def test_the_cache_is_bounded_but_keeps_the_file_in_use(tmp_path: Path) -> None:
    cache = ParsedSources(max_files=2, max_bytes=1000)
    files = []
    for name in "abc":
        path = tmp_path / f"{name}.py"
        path.write_text(f"{name} = 1\n")
        files.append(path)
    for path in files:
        cache.get(path)
    assert cache.parses == 3
    cache.get(files[2])
    cache.get(files[1])
    assert cache.parses == 3  # the two most recent are kept
    cache.get(files[0])
    assert cache.parses == 4  # the oldest was dropped
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 400)  # 2,400 bytes: over the budget on its own
    first = cache.get(big)
    assert cache.get(big) is first
    assert cache.parses == 5
    cache.get(files[0])
    cache.get(big)
    assert cache.parses == 7  # the big file gave way to the newer one


def test_the_first_binding_of_a_name_decides(tmp_path: Path) -> None:
    module = tmp_path / "order.py"
    module.write_text(
        textwrap.dedent(
            """\
            def kept():
                pass
            kept = 1
            shadowed = 1
            def shadowed():
                pass
            from os import path as joined
            class Thing:
                pass
            """
        )
    )
    assert check_source(module, "kept", "order").problem == ""
    assert "assigned or imported" in check_source(module, "shadowed", "order").uncertain
    assert "assigned or imported" in check_source(module, "joined", "order").uncertain
    assert (
        check_source(module, "Thing", "order").problem == "`order:Thing` is a class, not a function"
    )


@pytest.mark.parametrize(
    "source",
    ["x = " + "-" * 100_000 + "1\n", "x = 1" + " + 1" * 100_000 + "\n"],
    ids=["parser-stack", "tree-recursion"],
)
def test_absurdly_nested_source_is_a_problem_not_a_crash(tmp_path: Path, source: str) -> None:
    (tmp_path / "deep.py").write_text(source + "def tool():\n    pass\n")
    found = resolve_function("deep:tool", [tmp_path])
    assert found.problem == "cannot parse deep.py (nested too deeply to parse)"
