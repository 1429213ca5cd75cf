"""Where project code is found and how it is imported, pinned (found by mutation
testing: `python bench/mutation.py python_refs`, docs/testing.md).

What counts as project code decides what needs trust, so each judgment here is one a
user relies on: a file that sits in the project is project code wherever it points; an
installed module is not, compiled or not; a compiled module in the project is refused.
Importing project code touches nothing it does not own: `sys.path` is as it was
afterwards, a module already imported from the standard library is never replaced, and
a failed import leaves no half-made module behind.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from assembler.python_refs import import_located, import_module, locate_module

_names = itertools.count()


@pytest.fixture
def unique() -> Iterator[str]:
    """A module name no other test uses; removed from `sys.modules` afterwards."""
    name = f"pinned_mod_{next(_names)}"
    yield name
    for loaded in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
        del sys.modules[loaded]


def test_a_file_in_the_project_pointing_outside_is_project_code(
    tmp_path: Path, unique: str
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "real.py").write_text("def f():\n    pass\n", "utf-8")
    (project / f"{unique}.py").symlink_to(outside / "real.py")
    location = locate_module(unique, [project])
    assert location.in_project
    assert location.roots == (project.resolve(),)


def test_an_installed_module_is_not_project_code(tmp_path: Path) -> None:
    location = locate_module("json", [tmp_path])
    assert not location.in_project
    assert location.problem == ""


def test_an_installed_compiled_module_is_found_without_a_problem(tmp_path: Path) -> None:
    compiled = [
        name
        for name in ("_json", "_decimal", "_csv", "select", "_bisect")
        if (spec := importlib.util.find_spec(name)) is not None
        and spec.origin
        and spec.origin.endswith(tuple(EXTENSION_SUFFIXES))
    ]
    assert compiled, "no compiled standard module found to test with"
    location = locate_module(compiled[0], [tmp_path])
    assert (location.problem, location.in_project) == ("", False)


def test_a_compiled_package_in_the_project_is_refused(tmp_path: Path, unique: str) -> None:
    (tmp_path / unique).mkdir()
    (tmp_path / unique / "__init__.pyc").write_bytes(b"\x00" * 16)
    location = locate_module(unique, [tmp_path])
    assert location.problem.startswith(f"`{unique}` is __init__.pyc, not Python source")
    with pytest.raises(ImportError) as raised:
        import_located(location, [tmp_path])
    assert str(raised.value) == location.problem


def test_an_installed_module_is_imported_as_installed(tmp_path: Path) -> None:
    import json

    location = locate_module("json", [tmp_path])
    assert import_located(location, [tmp_path]) is json


def test_a_project_module_imports_its_siblings_and_leaves_sys_path_alone(
    tmp_path: Path, unique: str
) -> None:
    (tmp_path / f"{unique}_helper.py").write_text("VALUE = 41\n", "utf-8")
    (tmp_path / f"{unique}.py").write_text(
        f"from {unique}_helper import VALUE\n\ndef f():\n    return VALUE + 1\n", "utf-8"
    )
    before = list(sys.path)
    try:
        module = import_module(unique, [tmp_path])
        assert module.f() == 42
        assert sys.path == before
    finally:
        sys.modules.pop(f"{unique}_helper", None)


def test_a_project_directory_already_on_sys_path_stays_where_it_was(
    tmp_path: Path, unique: str
) -> None:
    (tmp_path / f"{unique}.py").write_text("def f():\n    return 1\n", "utf-8")
    sys.path.insert(0, str(tmp_path.resolve()))
    try:
        before = list(sys.path)
        assert import_module(unique, [tmp_path]).f() == 1
        assert sys.path == before
    finally:
        sys.path.remove(str(tmp_path.resolve()))


def test_a_project_module_cannot_replace_a_standard_one_already_imported(
    tmp_path: Path,
) -> None:
    import json

    (tmp_path / "json.py").write_text("def dumps():\n    return 'project'\n", "utf-8")
    with pytest.raises(ImportError) as raised:
        import_module("json", [tmp_path])
    assert str(raised.value) == (
        f"the project module `json` ({tmp_path / 'json.py'}) shadows the module `json` "
        f"already imported from {json.__file__}; rename the project module"
    )
    assert sys.modules["json"] is json


def test_another_projects_module_of_the_same_name_is_replaced(tmp_path: Path, unique: str) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for root, answer in ((first, "first"), (second, "second")):
        (root / unique).mkdir(parents=True)
        (root / unique / "__init__.py").write_text("", "utf-8")
        (root / unique / "tool.py").write_text(f"def f():\n    return {answer!r}\n", "utf-8")
    (first / f"{unique}x.py").write_text("def f():\n    return 'neighbour'\n", "utf-8")
    assert import_module(f"{unique}.tool", [first]).f() == "first"
    neighbour = import_module(f"{unique}x", [first])
    try:
        assert import_module(f"{unique}.tool", [second]).f() == "second"
        assert sys.modules[f"{unique}x"] is neighbour  # only the replaced package goes
    finally:
        sys.modules.pop(f"{unique}x", None)
    assert sys.modules[f"{unique}.tool"].__file__ == str((second / unique / "tool.py").resolve())


def test_a_failed_import_leaves_no_module_behind(tmp_path: Path, unique: str) -> None:
    runs = tmp_path / "runs.txt"
    (tmp_path / f"{unique}.py").write_text(
        f"with open({str(runs)!r}, 'a') as f:\n    f.write('ran\\n')\n"
        "raise RuntimeError('broken on import')\n",
        "utf-8",
    )
    for attempt in (1, 2):  # each attempt runs the file once: nothing half-made was kept
        with pytest.raises(RuntimeError, match="broken on import"):
            import_module(unique, [tmp_path])
        assert unique not in sys.modules
        assert runs.read_text("utf-8") == "ran\n" * attempt


def test_a_module_found_on_sys_path_inside_the_project_imports_from_there(
    tmp_path: Path, unique: str
) -> None:
    """A virtual environment inside the repository: found through `sys.path`, still
    project code, and imported from where it was found."""
    library = tmp_path / "venv" / "lib"
    library.mkdir(parents=True)
    (library / f"{unique}.py").write_text("def f():\n    return 'vendored'\n", "utf-8")
    sys.path.append(str(library))
    try:
        location = locate_module(unique, [tmp_path])
        assert location.in_project
        assert import_located(location, [tmp_path]).f() == "vendored"
    finally:
        sys.path.remove(str(library))


def test_a_module_gone_between_finding_and_importing_is_not_found(
    tmp_path: Path, unique: str
) -> None:
    (tmp_path / f"{unique}.py").write_text("def f():\n    pass\n", "utf-8")
    location = locate_module(unique, [tmp_path])
    (tmp_path / f"{unique}.py").unlink()
    with pytest.raises(ModuleNotFoundError) as raised:
        import_located(location, [tmp_path])
    assert str(raised.value) == f"module `{unique}` not found"


def test_a_project_module_imported_twice_runs_once(tmp_path: Path, unique: str) -> None:
    runs = tmp_path / "runs.txt"
    (tmp_path / f"{unique}.py").write_text(
        f"with open({str(runs)!r}, 'a') as f:\n    f.write('ran\\n')\n", "utf-8"
    )
    first = import_module(unique, [tmp_path])
    assert import_module(unique, [tmp_path]) is first
    assert runs.read_text("utf-8") == "ran\n"


def test_a_name_a_plain_module_imports_relatively_is_that_module(
    tmp_path: Path, unique: str
) -> None:
    """`pkg.api.tools` where `pkg/api.py` says `from . import impl as tools` is
    `pkg/impl.py`, as importing it would be (the way `os.path` is `posixpath`)."""
    package = tmp_path / unique
    package.mkdir()
    (package / "__init__.py").write_text("", "utf-8")
    (package / "impl.py").write_text("def f():\n    pass\n", "utf-8")
    (package / "api.py").write_text("from . import impl as tools\n", "utf-8")
    location = locate_module(f"{unique}.api.tools", [tmp_path])
    assert location.problem == ""
    assert location.path == package / "impl.py"
    assert location.roots == (tmp_path.resolve(),)


def test_a_name_a_plain_module_imports_is_that_module(tmp_path: Path, unique: str) -> None:
    (tmp_path / f"{unique}_helpers.py").write_text("def f():\n    pass\n", "utf-8")
    (tmp_path / f"{unique}.py").write_text(f"import {unique}_helpers as h\n", "utf-8")
    location = locate_module(f"{unique}.h", [tmp_path])
    assert location.problem == ""
    assert location.path == tmp_path / f"{unique}_helpers.py"


def test_a_name_a_plain_module_does_not_import_is_not_found(tmp_path: Path, unique: str) -> None:
    (tmp_path / f"{unique}.py").write_text("nothing = 1\n", "utf-8")
    assert locate_module(f"{unique}.nothing", [tmp_path]).problem == (
        f"module `{unique}.nothing` not found: `{unique}` is a module, not a package, "
        "and imports no module as `nothing`"
    )


def test_an_installed_module_reached_through_a_project_module_is_project_code(
    tmp_path: Path, unique: str
) -> None:
    """`wrap.j` where the project's `wrap.py` says `import json as j`: the file is
    json's, but importing it runs the project's `wrap.py` first, so it needs trust."""
    import json

    (tmp_path / f"{unique}.py").write_text("import json as j\n", "utf-8")
    location = locate_module(f"{unique}.j", [tmp_path])
    assert location.path == Path(json.__file__)
    assert location.roots == (tmp_path.resolve(),)
    assert location.top == tmp_path / f"{unique}.py"
    assert location.in_project


def _write(root: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, "utf-8")


def test_a_name_a_module_imports_relatively_is_found_in_its_package(
    tmp_path: Path, unique: str
) -> None:
    _write(
        tmp_path,
        {
            f"{unique}/__init__.py": "",
            f"{unique}/mod.py": "from . import other as name\nfrom .sib import thing as th\n",
            f"{unique}/other.py": "def f():\n    pass\n",
            f"{unique}/sib/__init__.py": "",
            f"{unique}/sib/thing.py": "def f():\n    pass\n",
            f"{unique}/sub/__init__.py": "",
            f"{unique}/sub/deep.py": "from .. import other as up\n",
        },
    )
    found = {
        name: locate_module(f"{unique}.{name}", [tmp_path]).path
        for name in ("mod.name", "mod.th", "sub.deep.up")
    }
    assert found == {
        "mod.name": tmp_path / unique / "other.py",
        "mod.th": tmp_path / unique / "sib" / "thing.py",
        "sub.deep.up": tmp_path / unique / "other.py",  # `..` is the package above `sub`
    }


def test_import_a_dot_b_binds_a(tmp_path: Path, unique: str) -> None:
    _write(
        tmp_path,
        {
            f"{unique}.py": f"import {unique}_pkg.inner\n",
            f"{unique}_pkg/__init__.py": "",
            f"{unique}_pkg/inner.py": "def f():\n    pass\n",
        },
    )
    location = locate_module(f"{unique}.{unique}_pkg.inner", [tmp_path])
    assert location.path == tmp_path / f"{unique}_pkg" / "inner.py"
    assert location.problem == ""


def test_imports_are_followed_eight_modules_deep_and_no_further(
    tmp_path: Path, unique: str
) -> None:
    chain = [f"{unique}_{i}" for i in range(10)]
    _write(tmp_path, {f"{a}.py": f"import {b} as nxt\n" for a, b in itertools.pairwise(chain)})
    _write(tmp_path, {f"{chain[-1]}.py": "def f():\n    pass\n"})
    eight = locate_module(chain[0] + ".nxt" * 8, [tmp_path])
    assert (eight.path, eight.problem) == (tmp_path / f"{chain[8]}.py", "")
    nine = locate_module(chain[0] + ".nxt" * 9, [tmp_path])
    assert nine.path is None
    assert nine.problem == (
        f"module `{chain[8]}.nxt` not found: `{chain[8]}` is a module, not a package, and "
        "imports are followed at most 8 modules deep"
    )
    assert locate_module(chain[1] + ".nxt" * 8, [tmp_path]).path == tmp_path / f"{chain[9]}.py"


def test_a_module_that_imports_no_such_name_says_so(tmp_path: Path, unique: str) -> None:
    _write(tmp_path, {f"{unique}.py": "import json\n"})
    location = locate_module(f"{unique}.missing", [tmp_path])
    assert location.problem == (
        f"module `{unique}.missing` not found: `{unique}` is a module, not a package, and "
        "imports no module as `missing`"
    )


def test_a_name_imported_among_others_is_that_module(tmp_path: Path, unique: str) -> None:
    """`shim.second` where `shim.py` says `from pkg import first, second` is
    `pkg/second.py`, not the first name of the import."""
    _write(
        tmp_path,
        {
            f"{unique}.py": f"from {unique}_pkg import first, second\n",
            f"{unique}_pkg/__init__.py": "",
            f"{unique}_pkg/first.py": "def f():\n    pass\n",
            f"{unique}_pkg/second.py": "def f():\n    pass\n",
        },
    )
    found = {
        name: locate_module(f"{unique}.{name}", [tmp_path]).path for name in ("first", "second")
    }
    assert found == {
        "first": tmp_path / f"{unique}_pkg" / "first.py",
        "second": tmp_path / f"{unique}_pkg" / "second.py",
    }


def test_names_imported_from_module_to_module_are_followed_eight_deep(
    tmp_path: Path, unique: str
) -> None:
    """`m0.x` where `m0` says `from m1 import x`, `m1` says `from m2 import x`, ...:
    each hop counts toward the same limit as `a.b.c` does."""
    chain = [f"{unique}_{i}" for i in range(10)]
    _write(tmp_path, {f"{a}.py": f"from {b} import x\n" for a, b in itertools.pairwise(chain)})
    _write(tmp_path, {f"{chain[-1]}.py": f"import {unique}_leaf as x\n"})
    _write(tmp_path, {f"{unique}_leaf.py": "def f():\n    pass\n"})
    within = locate_module(f"{chain[2]}.x", [tmp_path])
    assert (within.path, within.problem) == (tmp_path / f"{unique}_leaf.py", "")
    beyond = locate_module(f"{chain[1]}.x", [tmp_path])
    assert beyond.path is None
    # (the wording names no limit here: see docs/testing.md, survivors left)
    assert beyond.problem.startswith(f"module `{chain[1]}.x` not found: ")


def test_a_module_installed_in_front_on_sys_path_shadows_the_one_found_before(
    tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer is kept only while the directories searched stay as they were: a
    module added to an earlier `sys.path` directory is the one importing would load."""
    front, back, project = tmp_path / "front", tmp_path / "back", tmp_path / "project"
    for directory in (front, back, project):
        directory.mkdir()
    monkeypatch.syspath_prepend(str(back))
    monkeypatch.syspath_prepend(str(front))
    (back / f"{unique}.py").write_text("def f():\n    pass\n", "utf-8")
    assert locate_module(unique, [project]).path == back / f"{unique}.py"
    (front / f"{unique}.py").write_text("def f():\n    pass\n", "utf-8")
    assert locate_module(unique, [project]).path == front / f"{unique}.py"


def test_an_installed_module_reached_through_an_installed_module_is_not_project_code(
    tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, project = tmp_path / "site", tmp_path / "project"
    site.mkdir()
    project.mkdir()
    monkeypatch.syspath_prepend(str(site))
    (site / f"{unique}.py").write_text("import json as j\n", "utf-8")
    location = locate_module(f"{unique}.j", [project])
    assert location.problem == ""
    assert not location.in_project


def test_a_project_file_pointing_outside_is_project_code_for_what_it_imports(
    tmp_path: Path, unique: str
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "real.py").write_text("import json as j\n", "utf-8")
    (project / f"{unique}.py").symlink_to(outside / "real.py")
    location = locate_module(f"{unique}.j", [project])
    assert location.in_project
    assert location.roots == (project.resolve(),)


def test_an_installed_module_gone_before_importing_is_not_found_by_its_name(
    tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    (site / f"{unique}.py").write_text("def f():\n    pass\n", "utf-8")
    location = locate_module(unique, [tmp_path / "project"])
    assert not location.in_project
    (site / f"{unique}.py").unlink()
    importlib.invalidate_caches()
    with pytest.raises(ModuleNotFoundError) as raised:
        import_located(location, [tmp_path / "project"])
    assert raised.value.name == unique


def test_a_name_no_longer_a_module_when_importing_is_not_found(
    tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`shim.j` was `json` (`import json as j`) when found; by the time it is imported
    `shim.py` binds `j` to a number: the import fails, naming it, rather than return
    something that is not a module."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    (site / f"{unique}.py").write_text("import json as j\n", "utf-8")
    location = locate_module(f"{unique}.j", [tmp_path / "project"])
    assert location.problem == ""
    (site / f"{unique}.py").write_text("j = 1\n", "utf-8")
    importlib.invalidate_caches()
    with pytest.raises(ModuleNotFoundError) as raised:
        import_located(location, [tmp_path / "project"])
    assert raised.value.name == f"{unique}.j"


def test_a_project_package_reached_through_an_installed_module_is_its_top(
    tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`shim.p` where an installed `shim.py` says `import pkg.mod as p` and `pkg` is the
    project's: the project package is the location's top, the directory the write guard
    keeps the agent out of (every module in it may be imported), not `shim.py`."""
    site, project = tmp_path / "site", tmp_path / "project"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    _write(project, {f"{unique}_pkg/__init__.py": "", f"{unique}_pkg/mod.py": "X = 1\n"})
    (site / f"{unique}.py").write_text(f"import {unique}_pkg.mod as p\n", "utf-8")
    location = locate_module(f"{unique}.p", [project])
    assert location.path == project / f"{unique}_pkg" / "mod.py"
    assert location.in_project
    assert location.top == project / f"{unique}_pkg"
