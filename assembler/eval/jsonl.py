"""Tasks from a JSON lines file (`tasks_file:`): one task object per line, for batch
runs of thousands of inputs.

Lines are parsed with `json` (fast); only a line with a problem is read again with
the YAML loader (JSON is YAML's flow style), to point at the exact key or value in it.
Blank lines are skipped. `id` is optional here: line N without one is `line-N`, which
stays stable as long as the file is only appended to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from assembler.errors import Issue, ManifestError
from assembler.eval.schema import task_validator
from assembler.eval.spec import TaskSpec
from assembler.eval.tasks import build_task
from assembler.manifest.schema import schema_issues
from assembler.manifest.yaml_source import (
    JsonPath,
    Mark,
    SourceMap,
    decode_text,
    load_yaml_text,
)
from assembler.validation.validator import display_path

MAX_TASKS_FILE_BYTES = 1 << 30


def read_tasks_file(
    file: Path, written: str, report: Callable[[str], None], roots: Sequence[Path]
) -> tuple[list[TaskSpec], list[Issue]]:
    """The tasks of `file` and every issue in it; `report` places a problem with the
    file as a whole at the `tasks_file` line of the eval file. The prompt files its
    tasks name must lie in `roots` (`tasks.confined`)."""
    if not file.is_file():
        state = "is not a file" if file.exists() else "does not exist"
        report(f"the tasks file {written} {state}")
        return [], []
    shown = display_path(file)
    try:
        if file.stat().st_size > MAX_TASKS_FILE_BYTES:
            report(f"the tasks file {written} is larger than 1 GiB")
            return [], []
        text = decode_text(file.read_bytes(), shown)
    except ManifestError as e:
        return [], list(e.issues)
    except OSError as e:
        report(f"cannot read the tasks file {written}: {e.strerror or e}")
        return [], []
    base = file.resolve().parent
    tasks: list[TaskSpec] = []
    issues: list[Issue] = []
    first: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        reader = _Line(shown, number, line, issues)
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            issues.append(Issue(shown, number, e.colno, "error", f"invalid JSON: {e.msg}"))
            continue
        if not isinstance(data, dict):
            issues.append(Issue(shown, number, 1, "error", "a task line is a JSON object"))
            continue
        if _invalid(data):  # rare: only then is the line read again for positions
            issues.extend(schema_issues(data, reader.source(), validator=task_validator()))
            continue
        task_id = data.get("id") or f"line-{number}"
        if task_id in first:
            reader.report(
                ("id",),
                f"task id `{task_id}` is already used on line {first[task_id]}; ids must be unique",
            )
        first.setdefault(task_id, number)
        tasks.append(
            build_task(
                data,
                task_id=task_id,
                base=base,
                origin=f"{shown}:{number}",
                report=reader.report,
                roots=roots,
            )
        )
    if not tasks and not issues:
        report(f"the tasks file {written} holds no tasks")
    return tasks, issues


def _invalid(data: dict[str, Any]) -> bool:
    return any(True for _ in task_validator().iter_errors(data))


class _Line:
    """One line of the file; its source map (positions of keys and values) is built
    only when the line has a problem to point at."""

    def __init__(self, shown: str, number: int, text: str, issues: list[Issue]) -> None:
        self.shown = shown
        self.number = number
        self.text = text
        self.issues = issues
        self._source: SourceMap | None = None

    def source(self) -> SourceMap:
        if self._source is None:
            try:
                document = load_yaml_text(self.text, self.shown, line_offset=self.number - 1)
                self._source = document.source
            except ManifestError:  # valid JSON that YAML 1.1 reads otherwise: the line
                self._source = SourceMap(self.shown)
                self._source.values[()] = Mark(self.number, 1)
        return self._source

    def report(self, where: JsonPath, message: str) -> None:
        self.issues.append(self.source().issue(where, message))
