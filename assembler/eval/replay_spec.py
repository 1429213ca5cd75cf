"""The parts of a task that a converted session brings (`assemble sessions to-test`),
read and checked when the eval file is: the replay's expected inputs, the workspace
start, the files `files_equal` compares with. Paths resolve against the file naming
them and are stored absolute (a Dask worker may run elsewhere in the tree); a file
that is missing or malformed is an issue at its line, not a failure in every run.
Reading them runs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from assembler.errors import ConversionError
from assembler.eval.spec import Check, ReplaySpec
from assembler.manifest.yaml_source import JsonPath
from assembler.validation.paths import path_name_problem

Report = Callable[[JsonPath, str], None]


def _file(written: str, base: Path, what: str, report: Report, where: JsonPath) -> Path | None:
    problem = path_name_problem(written)
    if problem is not None:
        report(where, f"the {what}: {problem}")
        return None
    path = Path(os.path.normpath(base / written))
    if not path.is_file():
        report(where, f"the {what} {written} does not exist (looked for {path})")
        return None
    return path


def resolve_replay(raw: Any, base: Path, report: Report) -> ReplaySpec | None:
    """A task's `replay`, its expected inputs read once now (data, not code)."""
    if not isinstance(raw, Mapping):
        return None
    where: JsonPath = ("replay", "expected")
    path = _file(str(raw.get("expected", "")), base, "expected inputs", report, where)
    if path is None:
        return None
    # Imported here: only a replaying task needs the replay modules, and `validate`
    # reads eval files at its start-up cost.
    from assembler.regress.expected import load_expected

    try:
        load_expected(path)
    except ConversionError as e:
        report(where, str(e))
    return ReplaySpec(str(path), str(raw.get("mode", "strict")))


def resolve_start(raw: Any, base: Path, report: Report) -> str | None:
    """A task's `start`: a workspace start file, checked for its shape."""
    if not isinstance(raw, str):
        return None
    path = _file(raw, base, "workspace start", report, ("start",))
    if path is None:
        return None
    from assembler.regress.start import load_start  # as above

    try:
        load_start(path)
    except ConversionError as e:
        report(("start",), str(e))
    return str(path)


def resolve_check_files(check: Check, base: Path, report: Report, where: JsonPath) -> Check:
    """`files_equal` with `{file: PATH}` values made absolute (and checked to exist)."""
    if check.kind != "files_equal" or not isinstance(check.expected, Mapping):
        return check
    expected: dict[str, Any] = {}
    for name, value in check.expected.items():
        if isinstance(value, Mapping) and isinstance(value.get("file"), str):
            path = _file(value["file"], base, f"expected content of {name}", report, (*where, name))
            expected[name] = {"file": str(path) if path else value["file"]}
        else:
            expected[name] = value
    return replace(check, expected=expected)


def workspace_path_problem(path: str) -> str:
    """Why `path` cannot name a file of the workspace (empty when it can)."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts or "\\" in path:
        return f"`{path}` must be a relative path inside the workspace, with `/`"
    return ""


def child_scripts(expected: str) -> list[Path]:
    """The sub-agent replay scripts a replay's expected inputs link (their children's
    too): like the task's own script, each chooses tool calls, so each is project
    code for the trust question. An unreadable file links none (its task fails)."""
    from assembler.regress.expected import load_expected  # as above

    found: list[Path] = []
    todo = [Path(expected)]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            loaded = load_expected(path)
        except ConversionError:
            continue
        for link in loaded.children:
            found.append(Path(os.path.normpath(path.parent / link.script)))
            todo.append(Path(os.path.normpath(path.parent / link.expected)))
    return found
