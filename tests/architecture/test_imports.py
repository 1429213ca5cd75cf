"""The package's shape: no import cycles, counting imports inside functions too.

An import inside a function hides a cycle from the interpreter but not from the
reader (`manifest/loader.py` once called `validation`, which parses manifests). The
graphs here are built from the source with `ast`, so every `import` counts, wherever
it is written: between modules, and between packages (each direct subpackage and
top-level module of `assembler` is one node).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "assembler"


def module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(name: str, path: Path) -> set[str]:
    """Every module name an `import` in `path` mentions (absolute or relative), with
    `from a import b` counted as both `a` and `a.b`, since `b` may be a module."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def named_modules(path: Path, modules: Iterable[str]) -> set[str]:
    """The modules of the package that `path` names in a string (`"assembler.cli.run"`):
    a module loaded by name (the CLI's commands, the lazy exports) is imported too."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    strings = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    return strings & set(modules)


def module_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for imported in imported_names(name, path):
            target = imported
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        targets |= named_modules(path, modules) - {name}
        graph[name] = targets
    return graph


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph(modules: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in modules.items():
        node = graph.setdefault(package_of(source), set())
        node.update(package_of(t) for t in targets if package_of(t) != package_of(source))
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_commands_loaded_by_name_are_imports_of_cli_main() -> None:
    """`cli.main` imports each command's module by its name (lazily): a command that
    imported `cli.main` back would be a cycle the interpreter never sees."""
    graph = module_graph()
    assert {"assembler.cli.run", "assembler.cli.eval", "assembler.cli.rpc"} <= graph[
        "assembler.cli.main"
    ]
    assert "assembler.agent.build" in graph["assembler.agent"]  # a lazy export


def test_a_function_level_import_counts(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from assembler.validation import load\n", "utf-8")
    assert "assembler.validation.load" in imported_names("assembler.manifest.m", source)


@pytest.mark.parametrize("level", ["module", "package"])
def test_no_import_cycles(level: str) -> None:
    modules = module_graph()
    graph = modules if level == "module" else package_graph(modules)
    assert cycles(graph) == []


def test_parsing_never_imports_validation() -> None:
    """`manifest/` parses; `validation/` checks and loads. The other way round only."""
    graph = package_graph(module_graph())
    assert "assembler.validation" not in graph["assembler.manifest"]
    assert "assembler.manifest" in graph["assembler.validation"]


def test_no_module_is_over_five_hundred_lines() -> None:
    """A module over ~500 lines holds two concepts (STYLE.md); split it by concept."""
    long = {
        name: count
        for name, path in module_files().items()
        if (count := len(path.read_text("utf-8").splitlines())) > 500
    }
    assert long == {}
