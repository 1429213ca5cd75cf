"""Eight threads validating, dry-running and building agents at once.

CPython 3.11 counts the AST constructor's recursion depth per interpreter, not per
thread. Building the syntax tree of a module is C code, but a garbage collection it
triggers runs Python code when a `gc.callbacks` hook or a finalizer is installed
(profilers and cluster monitors install them), and there the interpreter may switch
threads; a second thread building a tree then moves the shared counter, and the first
fails with `SystemError: AST constructor recursion depth mismatch`. Every parse in the
package therefore holds one lock (`python_refs.parse_source`).

The test makes the race likely rather than hoping for it: a no-op GC hook, frequent
collections, a short thread switch interval, and many distinct modules (each file is
parsed once per process, so every round needs new ones) with deeply nested
expressions. Without the lock it failed in every one of 20 runs on the development
machine (CPython 3.11.7); CPython 3.12.1 and later fixed the counter, so there it
only proves that nothing else breaks under threads.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assembler.agent import build_agent
from assembler.agent.preview import preview_dry_run
from assembler.python_refs import source_cache
from assembler.testing import ScriptedModel
from assembler.validation.load import load_manifest
from assembler.validation.validator import validate_file

THREADS = 8
ROUNDS = 2
MODULES = 3
FUNCTIONS = 40
DEPTH = 12


def _module(functions: int, depth: int) -> str:
    nested = "(" * depth + "value" + " + 1)" * depth
    return "".join(
        f"def tool_{i}(value: int, label: str = 'x') -> str:\n"
        f'    """Tool {i}: returns a nested sum.\n\n    Args:\n        value: a number.\n    """\n'
        f"    return str([{nested}, {{'k': ({nested}, [{nested}])}}])\n\n\n"
        for i in range(functions)
    )


def _project(root: Path, tag: str) -> tuple[Path, list[str]]:
    """An agent whose Python tools live in MODULES modules of their own (names unique
    in the process, since building imports them)."""
    root.mkdir(parents=True)
    modules = [f"deep_{tag}_{m}" for m in range(MODULES)]
    for name in modules:
        (root / f"{name}.py").write_text(_module(FUNCTIONS, DEPTH), "utf-8")
    references = "\n".join(
        f"        - function: {name}:tool_{i}\n          name: {name}_{i}"
        for name in modules
        for i in range(0, FUNCTIONS, 8)
    )
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: deep\nidentity: You add numbers.\nmodel: openai:gpt-4o\n"
        f"tools:\n  sets:\n    - python:\n{references}\n",
        "utf-8",
    )
    return manifest, modules


@pytest.fixture
def race_prone() -> Iterator[None]:
    """Python code inside every collection, collections often, thread switches often."""
    interval, threshold = sys.getswitchinterval(), gc.get_threshold()

    def hook(phase: str, info: dict[str, int]) -> None:
        pass

    gc.callbacks.append(hook)
    gc.set_threshold(100)
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*threshold)
        gc.callbacks.remove(hook)


@pytest.mark.slow
def test_eight_threads_validate_render_and_build_at_once(tmp_path: Path, race_prone: None) -> None:
    projects = {
        (t, r): _project(tmp_path / f"t{t}r{r}", f"t{t}r{r}")
        for t in range(THREADS)
        for r in range(ROUNDS)
    }
    source_cache().clear()
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []
    tools: dict[tuple[int, int], list[str]] = {}

    def work(thread: int) -> None:
        try:
            start.wait()
            for round_ in range(ROUNDS):
                manifest, _ = projects[(thread, round_)]
                report = validate_file(manifest, env={})
                assert not report.issues, [issue.format() for issue in report.issues]
                preview = preview_dry_run(load_manifest(manifest, env={}))
                assert not preview.diagnostics
                agent = build_agent(
                    manifest, provider=ScriptedModel([]), trust=True, record_session=False
                )
                names = [tool.name for tool in agent.registry.tools()]
                assert names == [tool.name for tool in preview.tools]
                tools[(thread, round_)] = names
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for _, modules in projects.values():
            for name in modules:
                sys.modules.pop(name, None)
    assert failures == []
    assert len(tools) == THREADS * ROUNDS
    expected = [f"deep_t0r0_{m}_{i}" for m in range(MODULES) for i in range(0, FUNCTIONS, 8)]
    assert tools[(0, 0)] == expected
