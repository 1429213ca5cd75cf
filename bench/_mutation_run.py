"""Running the tests against each mutant of one module, in forked processes.

One baseline run of the module's tests records which lines of the module each test
executes (a line tracer on that one file). Each mutant then runs only the tests that
executed the statement it changes, fastest first, stopping at the first failure; a
mutant of code that runs at import time (a module constant, a default argument) runs
all of them. A mutant with no test that reaches it survives as "no tests".

A mutant runs in a child forked from a parent that already imported everything the
tests import, so a child pays for pytest's start and the chosen tests, not for
imports. The child executes the mutated module's code into the loaded module and
rebinds every other module's reference to the module's functions and classes, so a
test's `from assembler.x import f` and the package's own callers both reach the
mutant. Children are their own process group: a timeout kills what a test started too.

Before every test, in the baseline and in each mutant's child alike, the package's
process-wide memos are emptied (`clear_memos`): a memo makes its function's body run
in the first test that asks, and never again in that process, so without the clearing
the baseline credited memoised code to that one test only, and a mutant there ran
against that test alone (the template sandbox's class, built once per process, was
all but unmutated; issue 28, round 6).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import functools
import json
import os
import signal
import sys
import tempfile
import time
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _mutants import Mutant, mutated_tree, statement_lines

REPO = Path(__file__).resolve().parents[1]
PYTEST_FLAGS = ("-q", "-p", "no:cacheprovider", "-o", "addopts=", "--no-header", "-x")
_IMPORT_FAILED = 90
_PR_SET_PDEATHSIG = 1
_MODULE_KEYS = frozenset(
    {"__name__", "__file__", "__spec__", "__loader__", "__package__", "__builtins__", "__path__"}
    | {"__cached__"}
)


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # killed, timeout, survived, no tests
    tests: int
    seconds: float

    @property
    def killed(self) -> bool:
        return self.status in ("killed", "timeout")


@dataclass(frozen=True)
class Baseline:
    lines_by_test: dict[str, set[int]]
    seconds_by_test: dict[str, float]
    untraced: frozenset[str] = frozenset()
    """Tests during which the tracer was switched off (Python does so when the tracer
    itself fails, as at a `RecursionError`): they may reach any line, so they run
    for every mutant."""


class BaselineFailed(RuntimeError):
    """The unmutated module fails its own tests: no mutant result would mean anything."""


def module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


MEMOS = (
    "assembler.trust_files._PARSED",
    "assembler.python_refs._LOCATIONS",
    "assembler.python_source._SOURCES",
)
"""The package's memos that are not `functools` caches: module-level containers
emptied with `.clear()` (`clear_memos` finds the `functools` ones by itself)."""


def clear_memos(package: str, *, rescan: bool = False) -> int:
    """Empty the process-wide memos of `package` (the mutated module's top-level
    package); how many were emptied.

    Why clear rather than re-import: a memo is the one kind of state that makes a
    test's path through the code depend on the tests before it (its body runs for
    the first caller only), and emptying it is exact, cheap and touches nothing
    else, where importing the package again would make second copies of its classes
    and exceptions that the loaded tests and other packages still hold the first
    copies of. Found by walking the package's modules: every `functools.cache` /
    `lru_cache` wrapper defined in the package, at module level or on a class
    (methods, static and class methods), and the containers `MEMOS` names. A memo
    outside the package (Jinja2's own, say) holds nothing the package computed, so it
    is left alone. The walk (some 15 ms over 340 modules) is repeated only when a
    module has been imported since, or with `rescan` (after a mutant replaced a
    module's functions)."""
    known = _FOUND.get(package)
    if rescan or known is None or known[0] != len(sys.modules):
        known = (len(sys.modules), _memos_of(package))
        _FOUND[package] = known
    for clear in known[1]:
        clear()
    return len(known[1])


_FOUND: dict[str, tuple[int, list[Any]]] = {}
"""Per package: how many modules were loaded when its memos were found, and the
functions that empty them."""


def _memos_of(package: str) -> list[Any]:
    found: list[Any] = []
    prefix = f"{package}."
    for name, module in list(sys.modules.items()):
        if name != package and not name.startswith(prefix):
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, type) and value.__module__ == name:
                for attribute in list(vars(value).values()):
                    found += _cache_of(getattr(attribute, "__func__", attribute), package)
            else:
                found += _cache_of(value, package)
    for dotted in MEMOS:
        owner, _, attribute = dotted.rpartition(".")
        memo = getattr(sys.modules.get(owner), attribute, None)
        if dotted.startswith(prefix) and memo is not None:
            found.append(memo.clear)
    return found


_CACHE = type(functools.cache(len))
"""The type of what `functools.cache` and `lru_cache` return."""


def _cache_of(value: Any, package: str) -> list[Any]:
    if not isinstance(value, _CACHE):
        return []
    home = getattr(value, "__module__", None) or ""
    if home != package and not home.startswith(f"{package}."):
        return []
    return [value.cache_clear]


def run_module(
    path: str,
    test_paths: Sequence[str],
    mutants: Sequence[Mutant],
    *,
    jobs: int,
    on_done: Any = None,
    root: Path = REPO,
) -> tuple[list[Outcome], Baseline]:
    """Collect the tests once (this process becomes their pytest session), record the
    baseline in a child, then each mutant in a child, `jobs` at a time. `path` is
    relative to `root`, the folder its package is imported from."""
    import pytest

    plugin = _Session(path, root / path, mutants, jobs, on_done)
    code = pytest.main([*PYTEST_FLAGS, *test_paths], plugins=[plugin])
    if plugin.problem or plugin.outcomes is None or plugin.baseline is None:
        raise BaselineFailed(f"{path}: {plugin.problem or f'pytest exit status {code}'}")
    return plugin.outcomes, plugin.baseline


class _Session:
    """The pytest plugin that replaces the run loop: the session's collected items are
    run by forked children, never by this process."""

    def __init__(
        self, path: str, file: Path, mutants: Sequence[Mutant], jobs: int, on_done: Any
    ) -> None:
        self.path = path
        self.file = file
        self.mutants = mutants
        self.jobs = jobs
        self.on_done = on_done
        self.problem = ""
        self.outcomes: list[Outcome] | None = None
        self.baseline: Baseline | None = None

    def pytest_runtestloop(self, session: Any) -> bool:
        if session.testsfailed:
            self.problem = "the tests did not collect"
            return True
        items = {item.nodeid: item for item in session.items}
        _no_deadlines()
        baseline = _run_baseline(self.path, self.file, items)
        if isinstance(baseline, str):
            self.problem = baseline
            return True
        self.baseline = baseline
        self.outcomes = _run_mutants(
            self.path,
            self.file,
            self.mutants,
            items,
            baseline,
            jobs=self.jobs,
            on_done=self.on_done,
        )
        return True

    pytest_runtestloop.tryfirst = True  # type: ignore[attr-defined]


def _no_deadlines() -> None:
    """Hypothesis's per-example deadline and its too-slow health checks, off: the
    traced baseline is several times slower than a plain run, and a mutant that is
    merely slow must not count as killed. (Tests that set their own keep them.)"""
    with contextlib.suppress(ImportError):
        from hypothesis import HealthCheck, settings

        settings.register_profile(
            "mutation-testing",
            settings.default,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        settings.load_profile("mutation-testing")


def _run_baseline(path: str, file: Path, items: dict[str, Any]) -> Baseline | str:
    """The unmutated tests in a child, recording lines of `file` (module `path`) per test."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        report = Path(handle.name)
    try:
        pid = os.fork()
        if pid == 0:
            _child(lambda: _traced(path, file, items, report), quiet=True)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        data = json.loads(report.read_text() or "{}")
    finally:
        report.unlink(missing_ok=True)
    if code != 0:
        failed = ", ".join(data.get("failed", [])[:5]) or f"exit status {code}"
        return f"the tests fail without any mutant: {failed}"
    return Baseline(
        {test: set(lines) for test, lines in data["lines"].items()},
        data["seconds"],
        frozenset(data["untraced"]),
    )


def _run_mutants(
    path: str,
    file: Path,
    mutants: Sequence[Mutant],
    items: dict[str, Any],
    baseline: Baseline,
    *,
    jobs: int,
    on_done: Any,
) -> list[Outcome]:
    source = file.read_text()
    tree = ast.parse(source)
    running: dict[int, _Running] = {}
    results: dict[int, Outcome] = {}

    def finish(index: int, outcome: Outcome) -> None:
        results[index] = outcome
        if on_done is not None:
            on_done(outcome)

    try:
        for index, mutant in enumerate(mutants):
            tests = _tests_for(tree, mutant, baseline)
            if not tests:
                finish(index, Outcome(mutant, "no tests", 0, 0.0))
                continue
            while len(running) >= jobs:
                for pid, status in _reap(running):
                    finish(running[pid].index, running.pop(pid).outcome(status))
            pid = os.fork()
            if pid == 0:
                chosen = [items[t] for t in tests]
                _child(lambda m=mutant, c=chosen: _mutant_run(path, file, source, m, c), quiet=True)
            budget = 10.0 + 5 * sum(baseline.seconds_by_test[t] for t in tests)
            running[pid] = _Running(index, mutant, time.monotonic(), budget, len(tests))
        while running:
            for pid, status in _reap(running):
                finish(running[pid].index, running.pop(pid).outcome(status))
    finally:
        for pid in running:  # stopped early (Ctrl-C, SIGTERM): take the children along
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    return [results[i] for i in range(len(mutants))]


@dataclass(frozen=True)
class _Running:
    index: int
    mutant: Mutant
    started: float
    budget: float
    tests: int

    def outcome(self, status: int | None) -> Outcome:
        code = os.waitstatus_to_exitcode(status) if status is not None else None
        name = "timeout" if code is None else "survived" if code == 0 else "killed"
        return Outcome(self.mutant, name, self.tests, time.monotonic() - self.started)


def _reap(running: dict[int, _Running]) -> Iterator[tuple[int, Any]]:
    """Children that ended (status) or ran out of time (None, killed here)."""
    while True:
        now = time.monotonic()
        done = []
        for pid, child in running.items():
            waited, status = os.waitpid(pid, os.WNOHANG)
            if waited:
                done.append((pid, status))
            elif now - child.started > child.budget:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                done.append((pid, None))
        if done:
            yield from done
            return
        time.sleep(0.005)


def _tests_for(tree: ast.Module, mutant: Mutant, baseline: Baseline) -> list[str]:
    first, last, in_function = statement_lines(tree, mutant.node_path)
    if in_function:
        lines = set(range(first, last + 1))
        chosen = [
            t
            for t, seen in baseline.lines_by_test.items()
            if seen & lines or t in baseline.untraced
        ]
    else:
        chosen = list(baseline.lines_by_test)
    return sorted(chosen, key=lambda t: baseline.seconds_by_test[t])


def _child(body: Any, *, quiet: bool = False) -> None:
    """Run `body` as a forked child and leave with its status, never returning."""
    code = 1
    try:
        os.setpgid(0, 0)
        with contextlib.suppress(Exception):  # Linux: die with the parent, even by SIGKILL
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if quiet:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
        code = body()
    except BaseException:  # the child reports through its status only
        code = _IMPORT_FAILED
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _mutant_run(path: str, file: Path, source: str, mutant: Mutant, items: list[Any]) -> int:
    """0 when every chosen test passes against the mutant (it survived)."""
    module = sys.modules[module_name(path)]
    old = dict(module.__dict__)
    try:
        code = compile(mutated_tree(source, mutant), str(file), "exec")
        # a fresh namespace: a name the mutant no longer binds must not linger
        module.__dict__.clear()
        module.__dict__.update({k: v for k, v in old.items() if k in _MODULE_KEYS})
        exec(code, module.__dict__)
    except Exception:
        return _IMPORT_FAILED
    _rebind(module, old)
    clear_memos(package_of(path), rescan=True)  # find the mutant's own memos
    return 0 if _run_items(items, package_of(path)) is None else 1


def package_of(path: str) -> str:
    """The top-level package of the module at `path` (whose memos `clear_memos` empties)."""
    return module_name(path).partition(".")[0]


def _run_items(items: list[Any], package: str, on_start: Any = None) -> str | None:
    """Run the items in order as pytest would, each after emptying the package's
    memos; the first that fails, or None."""
    from _pytest.runner import runtestprotocol

    for position, item in enumerate(items):
        clear_memos(package)
        if on_start is not None:
            on_start(item)
        following = items[position + 1] if position + 1 < len(items) else None
        reports = runtestprotocol(item, log=False, nextitem=following)
        if any(report.failed for report in reports):
            return str(item.nodeid)
    return None


def _rebind(module: types.ModuleType, old: dict[str, Any]) -> None:
    """Point other modules' imported names at what the mutant bound instead.

    A function, class or other object is found by identity under any name (an import
    `as` another name too). A plain value (a string, a number, a frozenset) only under
    its own name (`from records import SUFFIX`): identity alone says little about
    where an interned string came from."""
    by_identity: dict[int, tuple[Any, Any]] = {}
    by_name: dict[str, tuple[Any, Any]] = {}
    for name, previous in old.items():
        if name in _MODULE_KEYS or name not in module.__dict__:
            continue
        new = module.__dict__[name]
        if previous is new:
            continue
        if isinstance(previous, _PLAIN):
            by_name[name] = (previous, new)
        else:
            by_identity[id(previous)] = (previous, new)
    for other in list(sys.modules.values()):
        namespace = getattr(other, "__dict__", None)
        if other is module or not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            hit = by_identity.get(id(value)) or by_name.get(name)
            if hit is not None and hit[0] is value:
                namespace[name] = hit[1]


_PLAIN = (str, bytes, int, float, bool, tuple, frozenset, type(None))


def _traced(path: str, file: Path, items: dict[str, Any], report: Path) -> int:
    """Run every item under a tracer of `file`'s lines (module `path`); write lines and
    seconds per test to `report`."""
    import threading

    target = str(file)
    lines: dict[str, set[int]] = {}
    seconds: dict[str, float] = {}
    current: list[Any] = [set(), "", 0.0]  # lines of the running test, its id, its start

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            current[0].add(frame.f_lineno)
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == target:
            current[0].add(frame.f_lineno)
            return local
        return None

    untraced: list[str] = []

    def close() -> None:
        if current[1]:
            seconds[current[1]] = time.perf_counter() - current[2]
            if sys.gettrace() is not tracer:
                untraced.append(current[1])

    def on_start(item: Any) -> None:
        close()
        current[:] = [lines.setdefault(item.nodeid, set()), item.nodeid, time.perf_counter()]
        sys.settrace(tracer)  # again: a failure in the tracer switched it off

    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        failed = _run_items(list(items.values()), package_of(path), on_start)
        close()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    report.write_text(
        json.dumps(
            {
                "lines": {test: sorted(seen) for test, seen in lines.items()},
                "seconds": seconds,
                "failed": [failed] if failed else [],
                "untraced": untraced,
            }
        )
    )
    return 1 if failed else 0
