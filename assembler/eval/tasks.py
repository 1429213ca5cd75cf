"""One task, from data the schema accepted to a `TaskSpec`: the checks beyond the schema.

Shared by inline tasks and the lines of a `tasks_file`. What is checked here is what
would otherwise fail in the middle of a run, once per task run: a `prompt_file` or a
`scripted:` replay that does not exist, a regular expression that does not compile, an
`unchanged` pattern that can never match. Relative paths resolve against the file that
names them. Nothing here runs anything.

A `prompt_file` goes to the model whole, so like a manifest's template file it must be
a project file: it resolves (links followed) inside one of the eval's `roots`, the eval
file's directory, the agent's directory or the workspace (`confined`). An eval file from
a repository cannot send `~/.ssh/id_rsa` to a model endpoint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assembler.errors import ManifestError
from assembler.eval.replay_spec import (
    resolve_check_files,
    resolve_replay,
    resolve_start,
    workspace_path_problem,
)
from assembler.eval.spec import Check, TaskSpec
from assembler.manifest.yaml_source import JsonPath, read_manifest_text
from assembler.permissions.path_patterns import compile_path_pattern
from assembler.validation.paths import path_name_problem

Report = Callable[[JsonPath, str], None]
"""Records an error at a JSON path of the task (relative to the task)."""

OUTSIDE = (
    "is outside the eval file's directory, the agent's directory and the workspace; "
    "an eval file may only put project files into the prompt"
)


def confined(written: str, base: Path, roots: Sequence[Path], what: str) -> tuple[Path, str]:
    """`written` resolved against `base`, and why it cannot be used (empty if it can):
    a name the file system cannot take, or a place outside every one of `roots`."""
    problem = path_name_problem(written)
    if problem is not None:
        return base, f"the {what}: {problem}"
    file = Path(os.path.normpath(base / written))
    try:
        resolved = file.resolve()
        inside = any(resolved.is_relative_to(root.resolve()) for root in roots)
    except (OSError, RuntimeError, ValueError) as e:
        return file, f"the {what} {written} cannot be resolved: {e}"
    if not inside:
        return file, f"the {what} {written} {OUTSIDE}"
    return file, ""


def resolve_model(model: str | None, base: Path, report: Report, where: JsonPath) -> str | None:
    """`scripted:FILE` relative to `base` becomes absolute (a worker may run elsewhere
    in the tree), and the file must exist; other models are left as written."""
    if model is None:
        return None
    provider, _, name = model.partition(":")
    if provider != "scripted":
        return model
    problem = path_name_problem(name)
    if problem is not None:
        report(where, f"the replay script: {problem}")
        return model
    # Imported here: only a scripted task needs it, and `assemble validate` (which loads
    # eval files) must stay free of the provider modules at start-up.
    from assembler.providers.scripted import load_script

    script = Path(os.path.normpath(base / name))
    if not script.is_file():
        report(where, f"the replay script {name} does not exist (looked for {script})")
    else:
        try:
            load_script(script)  # data, not code: read now rather than fail in every run
        except ManifestError as e:
            report(where, f"the replay script {name} is invalid: {e.issues[0].format()}")
    return f"scripted:{script}"


def build_task(
    raw: Mapping[str, Any],
    *,
    task_id: str,
    base: Path,
    origin: str,
    report: Report,
    roots: Sequence[Path],
) -> TaskSpec:
    """The task in `raw`, reporting every problem beyond the schema through `report`;
    a `prompt_file` must lie in one of `roots` (see the module docstring)."""
    prompt = raw.get("prompt")
    if prompt is None and raw.get("prompt_file") is not None:
        prompt = _read_prompt(raw["prompt_file"], base, roots, report)
    checks: list[Check] = []
    for index, data in enumerate(raw.get("checks") or ()):
        check = Check.from_dict(data)
        check_problems(check, ("checks", index, check.kind), report)
        checks.append(resolve_check_files(check, base, report, ("checks", index, check.kind)))
    return TaskSpec(
        id=task_id,
        prompt=prompt or "",  # none: the agent's `task:` (checked against the agent)
        params=None if raw.get("params") is None else dict(raw["params"]),
        runs_task="prompt" not in raw and "prompt_file" not in raw,
        checks=tuple(checks),
        model=resolve_model(raw.get("model"), base, report, ("model",)),
        max_turns=raw.get("max_turns"),
        timeout=None if raw.get("timeout") is None else float(raw["timeout"]),
        metadata=dict(raw.get("metadata") or {}),
        origin=origin,
        messages=tuple(dict(m) for m in raw.get("messages") or ()),
        replay=resolve_replay(raw.get("replay"), base, report),
        start=resolve_start(raw.get("start"), base, report),
    )


def _read_prompt(name: str, base: Path, roots: Sequence[Path], report: Report) -> str:
    file, problem = confined(name, base, roots, "prompt file")
    if problem:
        report(("prompt_file",), problem)
        return ""
    if not file.exists():
        report(("prompt_file",), f"the prompt file {name} does not exist (looked for {file})")
        return ""
    try:
        text = read_manifest_text(file, name)
    except ManifestError as e:
        report(("prompt_file",), f"the prompt file {name}: {e.issues[0].message}")
        return ""
    if not text.strip():
        report(("prompt_file",), f"the prompt file {name} is empty")
    return text


def check_problems(check: Check, where: JsonPath, report: Report) -> None:
    """What the schema cannot see in one check: a regular expression that does not
    compile, an `unchanged` pattern that can never match."""
    if check.kind == "answer_matches":
        try:
            re.compile(check.argument)
        except re.error as e:
            at = f" at position {e.pos}" if e.pos is not None else ""
            report(where, f"not a valid regular expression: {e.msg}{at}")
    elif check.kind == "files_equal":
        for path in check.expected or {}:
            problem = workspace_path_problem(path)
            if problem:
                report((*where, path), problem)
    elif check.kind == "unchanged":
        for index, pattern in enumerate(check.patterns):
            never = compile_path_pattern(pattern).never
            if never:
                path = where if len(check.patterns) == 1 else (*where, index)
                report(path, f"`{pattern}` can never match: {never}")
