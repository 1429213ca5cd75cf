"""Read and check an eval file (`*.eval.yaml`): every problem, with file:line:col.

The same function serves `assemble validate` and `assemble eval`, so an eval file that
validates is one that runs. It checks the file against its own schema
(`eval.schema.json`), then what the schema cannot see (files that must exist, unique
task ids, regular expressions, path patterns), and validates the agent it names the
way `assemble validate` does, whole (a team's members included), before any task
runs. It never runs project code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.errors import Issue, ManifestError
from assembler.eval.jsonl import read_tasks_file
from assembler.eval.schema import file_validator
from assembler.eval.spec import (
    CHECK_KINDS,
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_TIMEOUT,
    VALUE_KINDS,
    Check,
    Defaults,
    EvalSpec,
    TaskSpec,
)
from assembler.eval.tasks import (
    Report,
    build_task,
    check_problems,
    confined,
    read_budget,
    resolve_model,
)
from assembler.manifest.model import Manifest
from assembler.manifest.schema import schema_issues
from assembler.manifest.yaml_source import JsonPath, SourceMap, format_path, load_yaml_file
from assembler.validation.context import dir_state, is_dir
from assembler.validation.paths import broad_workspace, path_name_problem
from assembler.validation.validator import EVAL_SUFFIXES, display_path, validate_file


@dataclass(frozen=True)
class EvalReport:
    """Everything found in one eval file and the agent tree it names."""

    path: Path
    issues: tuple[Issue, ...]
    spec: EvalSpec | None = None
    manifest: Manifest | None = None

    @property
    def has_errors(self) -> bool:
        return any(issue.severity == "error" for issue in self.issues)


def eval_name(path: Path) -> str:
    name = path.name
    for suffix in (*EVAL_SUFFIXES, ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def validate_eval_file(
    path: Path, *, unset_variables: str = "warning", display: str | None = None
) -> EvalReport:
    """All issues of one eval file and of its agent; the typed spec when none is an error.

    `unset_variables`: "warning" for `assemble validate` (CI may lack the secrets a run
    needs), "error" when the evaluation is about to run.
    """
    shown = display or display_path(path)
    try:
        document = load_yaml_file(path, shown)
    except ManifestError as e:
        return EvalReport(path, e.issues)
    data, source = document.data, document.source
    if not isinstance(data, dict):
        mark = source.locate(())
        message = "an eval file is a YAML mapping with `version`, `agent` and `tasks`"
        return EvalReport(path, (Issue(shown, mark.line, mark.column, "error", message),))
    issues = _without_echoes(schema_issues(data, source, validator=file_validator()))
    rejected = {issue.path for issue in issues}  # the schema gives errors only
    base = path.resolve().parent

    def report(where: JsonPath, message: str) -> None:
        issues.append(source.issue(where, message))

    manifest = None
    agent_path = None
    if isinstance(data.get("agent"), str) and data["agent"]:
        problem = path_name_problem(data["agent"])
        if problem is not None:
            report(("agent",), f"the agent manifest: {problem}")
        else:
            agent_path = Path(os.path.normpath(base / data["agent"]))
            manifest = _validate_agent(agent_path, data["agent"], report, issues, unset_variables)
    workspace = _workspace(data.get("workspace"), base, source)
    issues.extend(workspace.issues)
    if rejected & {"", "version", "agent", "tasks"}:
        for index, raw in enumerate(_items(data.get("tasks"))):
            _unbuilt_task_checks(raw, ("tasks", index), rejected, report)
        return EvalReport(path, _sorted(issues, shown))
    # Below, each part the schema accepted is checked further, so one pass reports all.
    defaults = Defaults()
    if not any(_under(p, "defaults") for p in rejected):
        defaults = _defaults(data.get("defaults") or {}, base, report)
    # Where the files that go into prompts may be: the eval file's directory, the
    # agent's, and the workspace the tasks copy.
    task_workspace = workspace.path or (manifest.workspace if manifest is not None else None)
    roots = [base]
    if agent_path is not None:
        roots.append(agent_path.parent)
    if task_workspace is not None:
        roots.append(task_workspace)
    tasks = _inline_tasks(
        data, base=base, shown=shown, source=source, report=report, rejected=rejected, roots=roots
    )
    tasks_file = data.get("tasks_file")
    if isinstance(tasks_file, str) and "tasks_file" not in rejected:
        file, problem = confined(tasks_file, base, roots, "tasks file")
        if problem:
            report(("tasks_file",), problem)
        else:
            tasks, found = read_tasks_file(
                file, tasks_file, lambda m: report(("tasks_file",), m), roots
            )
            issues.extend(found)
    total_budget = None
    if not any(_under(p, "budget") for p in rejected):
        total_budget = read_budget(data.get("budget"), report, ("budget",))
    if manifest is not None:
        _check_typed_tasks(manifest, tasks, data, report, from_file=tasks_file is not None)
    spec = None
    if not any(i.severity == "error" for i in issues) and agent_path is not None:
        spec = EvalSpec(
            path=path.resolve(),
            name=data.get("name") or eval_name(path),
            agent=agent_path,
            tasks=tuple(tasks),
            workspace=workspace.path,
            defaults=defaults,
            description=data.get("description", ""),
            budget=total_budget,
        )
    return EvalReport(path, _sorted(issues, shown), spec, manifest)


def load_eval(path: Path) -> EvalReport:
    """An eval file ready to run, or one `ManifestError` listing every error (its own
    and its agent tree's); warnings are in the report."""
    report = validate_eval_file(path, unset_variables="error")
    if report.has_errors or report.spec is None or report.manifest is None:
        raise ManifestError(report.issues)
    return report


def _check_typed_tasks(
    manifest: Manifest,
    tasks: Sequence[TaskSpec],
    data: dict[str, Any],
    report: Report,
    *,
    from_file: bool,
) -> None:
    """Each task against the agent's `parameters` and `task:`: its `params` fit (every
    problem listed), a task without a prompt has the agent's task to run, and an
    `output_*` check has an agent with `output:` to check."""
    from assembler.errors import ParameterError
    from assembler.typed.parameters import Parameters

    raw_tasks = _items(data.get("tasks"))
    index_of = {  # only ids that are strings: a malformed one is the schema's error
        t["id"]: i
        for i, t in enumerate(raw_tasks)
        if isinstance(t, dict) and isinstance(t.get("id"), str)
    }
    parameters = Parameters(manifest.parameters, agent=manifest.name)
    for task in tasks:
        index = None if from_file else index_of.get(task.id)
        where: JsonPath = ("tasks_file",) if index is None else ("tasks", index)
        prefix = f"task `{task.id}`: " if index is None else ""
        if task.runs_task and manifest.task is None:
            report(
                where,
                f"{prefix}a task needs a `prompt` or a `prompt_file`: the agent "
                f"`{manifest.name}` has no `task:` to run",
            )
        if task.params is not None or manifest.parameters:
            try:
                parameters.bind(task.params)
            except ParameterError as e:
                at = where if index is None or task.params is None else (*where, "params")
                report(at, f"{prefix}{e}")
        if manifest.output is None:
            for number, check in enumerate(task.checks):
                if check.kind in VALUE_KINDS:
                    at = where if index is None else (*where, "checks", number, check.kind)
                    report(at, f"{prefix}`{check.kind}` needs an agent with `output:`")


def _validate_agent(
    agent: Path, written: str, report: Report, issues: list[Issue], unset_variables: str
) -> Manifest | None:
    if not agent.is_file():
        state = "is not a file" if agent.exists() else "does not exist"
        report(("agent",), f"the agent manifest {written} {state}")
        return None
    found = validate_file(agent, unset_variables=unset_variables)
    issues.extend(found.issues)
    return found.manifest


def _defaults(raw: dict[str, Any], base: Path, report: Report) -> Defaults:
    return Defaults(
        model=resolve_model(raw.get("model"), base, report, ("defaults", "model")),
        max_turns=raw.get("max_turns"),
        timeout=float(raw.get("timeout", DEFAULT_TIMEOUT)),
        check_timeout=float(raw.get("check_timeout", DEFAULT_CHECK_TIMEOUT)),
        budget=read_budget(raw.get("budget"), report, ("defaults", "budget")),
    )


def _inline_tasks(
    data: dict[str, Any],
    *,
    base: Path,
    shown: str,
    source: SourceMap,
    report: Report,
    rejected: set[str],
    roots: Sequence[Path],
) -> list[TaskSpec]:
    tasks: list[TaskSpec] = []
    first: dict[str, str] = {}
    for index, raw in enumerate(data.get("tasks") or ()):
        if not isinstance(raw, dict):
            continue  # the schema said what a task is, at its place
        where: JsonPath = ("tasks", index)
        origin = f"{shown}:{source.locate(where).line}"
        task_id = raw.get("id")
        if isinstance(task_id, str) and task_id in first:
            report(
                (*where, "id"),
                f"task id `{task_id}` is already used at {first[task_id]}; ids must be unique",
            )
        if isinstance(task_id, str):
            first.setdefault(task_id, origin)
        if any(_under(p, f"tasks[{index}]") for p in rejected):
            _unbuilt_task_checks(raw, where, rejected, report)
            continue

        def at(path: JsonPath, message: str, where: JsonPath = where) -> None:
            report((*where, *path), message)

        tasks.append(
            build_task(raw, task_id=str(task_id), base=base, origin=origin, report=at, roots=roots)
        )
    return tasks


@dataclass(frozen=True)
class _Workspace:
    path: Path | None
    issues: tuple[Issue, ...] = ()


def _workspace(written: object, base: Path, source: SourceMap) -> _Workspace:
    """The eval's own `workspace`: it must be a directory, and the whole disk or the
    home directory warns, as a manifest's does."""
    if not isinstance(written, str) or not written:
        return _Workspace(None)
    problem = path_name_problem(written)
    if problem is not None:
        return _Workspace(None, (source.issue(("workspace",), f"the workspace: {problem}"),))
    workspace = Path(os.path.normpath(base / written))
    if not is_dir(workspace):
        state = dir_state(workspace)
        return _Workspace(None, (source.issue(("workspace",), f"the workspace {written} {state}"),))
    broad = broad_workspace(workspace)
    if broad is None:
        return _Workspace(workspace)
    return _Workspace(workspace, (source.issue(("workspace",), broad, severity="warning"),))


def _unbuilt_task_checks(raw: Any, where: JsonPath, rejected: set[str], report: Report) -> None:
    """The checks of a task that is not built, because the schema rejected something
    else in it or in the file: each check the schema accepted is still checked, so an
    invalid regular expression is reported in the same run as the schema's errors."""
    checks = raw.get("checks") if isinstance(raw, dict) else None
    for index, data in enumerate(_items(checks)):
        at: JsonPath = (*where, "checks", index)
        kinds = [kind for kind in CHECK_KINDS if isinstance(data, dict) and kind in data]
        if len(kinds) != 1 or any(_under(p, format_path(at)) for p in rejected):
            continue
        value = data[kinds[0]]
        shapes = value if isinstance(value, list) else [value]
        if kinds[0] in ("answer_matches", "unchanged") and all(isinstance(v, str) for v in shapes):
            check = Check.from_dict(data)
            check_problems(check, (*at, check.kind), report)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _under(path: str, prefix: str) -> bool:
    """Whether the JSON path `path` (`tasks[0].checks`) is `prefix` or inside it."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _without_echoes(issues: list[Issue]) -> list[Issue]:
    """Drop "a check is exactly one of ..." where the same mapping has an unknown key:
    the misspelt key (`comand`, with its "did you mean") is the whole story."""
    unknown = {i.path.rpartition(".")[0] for i in issues if i.message.startswith("unknown key")}
    return [i for i in issues if not (i.path in unknown and "exactly one of" in i.message)]


def _sorted(issues: list[Issue], shown: str) -> tuple[Issue, ...]:
    """This file's issues first, in file order, then the agent tree's."""
    unique = set(issues)
    return tuple(sorted(unique, key=lambda i: (i.file != shown, i.file, i.line, i.column)))
