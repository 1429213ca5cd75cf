"""Where a module is, found once and reused while nothing that decided it changed
(issue 21: `render` with 1,000 tools from one module located it 2,000 times).

Real directories and files; `location_cache().computed` counts the searches made.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.agent.preview import preview_dry_run
from assembler.python_refs import locate_module, location_cache
from assembler.stamped import StampedCache
from assembler.validation.load import load_manifest
from assembler.validation.validator import validate_file

TOOLS = 20


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    location_cache().clear()


def searches() -> int:
    return location_cache().computed


def _project(root: Path) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "__init__.py").write_text("")
    (root / "tools" / "many.py").write_text(
        "".join(
            f'def tool_{i}(path: str) -> str:\n    """Tool {i}."""\n    return path\n\n'
            for i in range(TOOLS)
        )
    )
    entries = "".join(f"        - tools.many:tool_{i}\n" for i in range(TOOLS))
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: many\nidentity: x\nmodel: openai:gpt-4o\n"
        f"tools:\n  sets:\n    - python:\n{entries}"
    )
    return manifest


def test_validate_and_render_locate_a_module_once_for_all_its_tools(tmp_path: Path) -> None:
    manifest = _project(tmp_path)
    before = searches()
    assert not validate_file(manifest, env={}).issues
    preview = preview_dry_run(load_manifest(manifest, env={}))
    assert [t.name for t in preview.tools if t.name.startswith("tool_")] == [
        f"tool_{i}" for i in range(TOOLS)
    ]
    # once for validation's list of roots and once for the build's (not 2 x TOOLS)
    assert searches() - before <= 2


def test_a_new_module_that_shadows_the_found_one_is_seen(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    (elsewhere / "helpers").mkdir(parents=True)
    (elsewhere / "helpers" / "__init__.py").write_text("")
    (elsewhere / "helpers" / "fees.py").write_text("def quote(): ...\n")
    roots = [project, elsewhere]
    first = locate_module("helpers.fees", roots)
    assert first.path == elsewhere / "helpers" / "fees.py"
    assert locate_module("helpers.fees", roots) is first

    (project / "helpers").mkdir()  # the project directory is searched first
    (project / "helpers" / "__init__.py").write_text("")
    (project / "helpers" / "fees.py").write_text("def quote(): ...\n")
    assert locate_module("helpers.fees", roots).path == project / "helpers" / "fees.py"


def test_a_removed_file_and_a_module_turned_package_are_seen(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("def f(): ...\n")
    assert locate_module("pkg.mod", [tmp_path]).path == tmp_path / "pkg" / "mod.py"

    (tmp_path / "pkg" / "mod.py").unlink()
    assert "not found" in locate_module("pkg.mod", [tmp_path]).problem

    (tmp_path / "pkg" / "mod").mkdir()
    (tmp_path / "pkg" / "mod" / "__init__.py").write_text("def f(): ...\n")
    assert locate_module("pkg.mod", [tmp_path]).path == tmp_path / "pkg" / "mod" / "__init__.py"


def test_a_link_pointed_into_the_project_makes_the_module_project_code(tmp_path: Path) -> None:
    """Trust rests on this answer: a module linked from outside into the project must
    not be remembered as "not the project's"."""
    project, outside, site = tmp_path / "project", tmp_path / "outside", tmp_path / "site"
    for folder in (project, outside, site):
        folder.mkdir()
    (outside / "real.py").write_text("def f(): ...\n")
    (project / "real.py").write_text("def f(): ...\n")
    (site / "linked.py").symlink_to(outside / "real.py")
    roots = [project, site]  # `site` is searched after the project, as sys.path would be
    first = locate_module("linked", roots)
    assert first.target == outside / "real.py"
    assert project.resolve() not in first.roots

    (site / "linked.py").unlink()
    (site / "linked.py").symlink_to(project / "real.py")
    again = locate_module("linked", roots)
    assert again.target == (project / "real.py").resolve()
    assert project.resolve() in again.roots


def test_a_module_that_is_not_found_is_searched_for_again(tmp_path: Path) -> None:
    before = searches()
    assert locate_module("no_such_module_here", [tmp_path]).problem
    (tmp_path / "no_such_module_here.py").write_text("def f(): ...\n")
    assert (
        locate_module("no_such_module_here", [tmp_path]).path == tmp_path / "no_such_module_here.py"
    )
    assert searches() - before == 2


def test_the_stamped_cache_keeps_an_answer_only_while_its_paths_are_unchanged(
    tmp_path: Path,
) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    cache: StampedCache[int] = StampedCache(max_entries=2)
    calls = []

    def count() -> tuple[int, list[str]]:
        calls.append(1)
        return len(os.listdir(watched)), [str(watched)]

    assert cache.get("k", count) == 0
    assert cache.get("k", count) == 0
    assert cache.computed == 1  # computed twice for a new answer, counted once
    (watched / "a").write_text("")
    assert cache.get("k", count) == 1
    assert cache.computed == 2
    for key in ("x", "y"):  # past max_entries the least recently used goes
        cache.get(key, count)
    cache.get("k", count)
    assert cache.computed == 5


def test_an_answer_that_changed_while_computed_is_not_kept(tmp_path: Path) -> None:
    cache: StampedCache[int] = StampedCache()
    answers = iter([1, 2, 2, 2])

    def changing() -> tuple[int, list[str]]:
        return next(answers), [str(tmp_path)]

    assert cache.get("k", changing) == 2  # the two computations disagreed: the later wins
    assert cache.get("k", changing) == 2  # and nothing was kept from the first
    assert next(answers, None) is None


def test_a_namespace_package_module_is_searched_for_every_time(tmp_path: Path) -> None:
    """Any directory searched may add a portion to a namespace package, so where its
    modules are is never kept."""
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "space").mkdir(parents=True)
    (second / "space").mkdir(parents=True)
    (second / "space" / "mod.py").write_text("def f(): ...\n")
    roots = [first, second]
    assert locate_module("space.mod", roots).path == second / "space" / "mod.py"
    (first / "space" / "mod.py").write_text("def f(): ...\n")  # the earlier portion wins
    assert locate_module("space.mod", roots).path == first / "space" / "mod.py"
