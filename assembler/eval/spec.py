"""The typed evaluation: an eval file after it validated, and one planned task run.

Everything here is frozen and converts to and from plain JSON data (`to_dict` /
`from_dict`), because a task run travels to Dask workers as data: a worker needs
agent-assembler installed and the files the paths name, never the client's objects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

CheckKind = Literal[
    "command",
    "unchanged",
    "answer_contains",
    "answer_matches",
    "tool_called",
    "tool_not_called",
    "output_matches",
    "output_equals",
    "files_equal",
    "tool_sequence",
]
CHECK_KINDS: tuple[CheckKind, ...] = get_args(CheckKind)
VALUE_KINDS = ("output_matches", "output_equals")
"""Checks whose argument is a JSON value (`value`), not text."""
DATA_KINDS: tuple[CheckKind, ...] = ("files_equal", "tool_sequence")
"""Checks whose value is data (`Check.expected`), not one string."""

DEFAULT_TIMEOUT = 300.0
DEFAULT_CHECK_TIMEOUT = 60.0


@dataclass(frozen=True)
class Check:
    """One check: `argument` is the command, text, regular expression or tool name;
    `patterns` the path patterns of `unchanged`; `timeout` a command's own limit;
    `expected` the data of `files_equal` (path -> content) and `tool_sequence` (names)."""

    kind: CheckKind
    argument: str = ""
    patterns: tuple[str, ...] = ()
    timeout: float | None = None
    value: Any = None
    """The JSON value of `output_matches` / `output_equals`."""
    expected: Any = field(default=None, compare=False)
    """The data of `files_equal` / `tool_sequence`."""

    def describe(self) -> str:
        """The check as written, for summaries: `command: python3 -m unittest`."""
        if self.kind in VALUE_KINDS:
            text = json.dumps(self.value, ensure_ascii=False)
            return f"{self.kind}: {text if len(text) <= 120 else text[:119] + '…'}"
        if self.kind == "files_equal":
            paths = list(self.expected or {})
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        elif self.kind == "tool_sequence":
            shown = " ".join(self.expected or [])
        else:
            shown = ", ".join(self.patterns) if self.kind == "unchanged" else self.argument
        return f"{self.kind}: {shown}"

    def to_dict(self) -> dict[str, Any]:
        value: Any = self.argument
        if self.kind == "unchanged":
            value = list(self.patterns)
        elif self.kind in VALUE_KINDS:
            value = self.value
        elif self.kind in DATA_KINDS:
            value = self.expected
        data: dict[str, Any] = {self.kind: value}
        if self.timeout is not None:
            data["timeout"] = self.timeout
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        """From the form the schema accepted (one kind key, `timeout` beside `command`)."""
        kind = next(k for k in CHECK_KINDS if k in data)
        value = data[kind]
        timeout = data.get("timeout")
        if kind in VALUE_KINDS:
            return cls(kind, value=value)
        if kind == "unchanged":
            patterns = (value,) if isinstance(value, str) else tuple(value)
            return cls(kind, patterns=patterns)
        if kind == "files_equal":
            return cls(kind, expected=dict(value))
        if kind == "tool_sequence":
            return cls(kind, expected=[str(name) for name in value])
        return cls(kind, str(value), timeout=None if timeout is None else float(timeout))


@dataclass(frozen=True)
class ReplaySpec:
    """A task that replays a recorded session (`assemble sessions to-test`): the
    expected inputs file (absolute) and the mode, `strict` (any divergence fails the
    task) or `outcome` (only the checks count)."""

    expected: str
    mode: str = "strict"

    def to_dict(self) -> dict[str, Any]:
        return {"expected": self.expected, "mode": self.mode}


@dataclass(frozen=True)
class TaskSpec:
    """One task: its prompt text (read from `prompt_file` when it had one), the
    model it asks for (`scripted:` paths made absolute), limits, checks, metadata.
    `origin` says where it was written (`file:line`), for messages."""

    id: str
    prompt: str
    checks: tuple[Check, ...] = ()
    model: str | None = None
    max_turns: int | None = None
    timeout: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    origin: str = ""
    params: Mapping[str, Any] | None = None
    """Values of the agent's parameters (None: none given). An empty `prompt` runs the
    agent's `task:`."""
    runs_task: bool = field(default=False, compare=False)
    """Written without `prompt` and `prompt_file` (the agent's `task:` is the prompt);
    for validation only."""
    messages: tuple[Mapping[str, Any], ...] = ()
    """What the user did after `prompt`, in order: `prompt`, `steer` (with
    `after_turn`), `follow_up`, `compact`, `interrupt` (see `eval.session_task`)."""
    replay: ReplaySpec | None = None
    start: str | None = None
    """A workspace start file (absolute): the task's workspace is rebuilt from it."""
    budget: Mapping[str, Any] | None = None
    """The task's own `budget` (`BudgetLimits.to_dict()` form), None: the defaults'."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": None if self.budget is None else dict(self.budget),
            "id": self.id,
            "prompt": self.prompt,
            "params": None if self.params is None else dict(self.params),
            "messages": [dict(m) for m in self.messages],
            "replay": self.replay.to_dict() if self.replay is not None else None,
            "start": self.start,
            "checks": [c.to_dict() for c in self.checks],
            "model": self.model,
            "max_turns": self.max_turns,
            "timeout": self.timeout,
            "metadata": dict(self.metadata),
            "origin": self.origin,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskSpec:
        replay = data.get("replay")
        return cls(
            id=str(data["id"]),
            prompt=str(data["prompt"]),
            messages=tuple(dict(m) for m in data.get("messages") or ()),
            replay=ReplaySpec(str(replay["expected"]), str(replay.get("mode", "strict")))
            if replay
            else None,
            start=data.get("start"),
            checks=tuple(Check.from_dict(c) for c in data.get("checks") or ()),
            model=data.get("model"),
            max_turns=data.get("max_turns"),
            timeout=data.get("timeout"),
            metadata=dict(data.get("metadata") or {}),
            origin=str(data.get("origin", "")),
            params=None if data.get("params") is None else dict(data["params"]),
            budget=data.get("budget"),
        )


@dataclass(frozen=True)
class Defaults:
    model: str | None = None
    max_turns: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    budget: Mapping[str, Any] | None = None
    """Each task run's budget (`defaults.budget`), None: the agent's own."""


@dataclass(frozen=True)
class EvalSpec:
    """An eval file that validated. `agent` and `workspace` are absolute; `workspace`
    None means the agent's own."""

    path: Path
    name: str
    agent: Path
    tasks: tuple[TaskSpec, ...]
    workspace: Path | None = None
    defaults: Defaults = field(default_factory=Defaults)
    description: str = ""
    budget: Mapping[str, Any] | None = None
    """The whole evaluation's budget (`BudgetLimits.to_dict()` form)."""


@dataclass(frozen=True)
class RunRequest:
    """One task run, everything resolved: what a worker needs to do it alone.

    `model` is the model string to build with (None: the manifest's), after the
    order `--model`, then the task's, then the file's default.
    """

    eval_name: str
    task: TaskSpec
    repeat: int
    manifest: Path
    session_dir: Path
    workspace: Path | None = None
    model: str | None = None
    max_turns: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    budget: Mapping[str, Any] | None = None
    """The run's budget over the agent's `limits.budget` (`BudgetLimits.to_dict()`)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.task.id, self.repeat)

    @property
    def label(self) -> str:
        return f"{self.task.id}#{self.repeat}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_name": self.eval_name,
            "task": self.task.to_dict(),
            "repeat": self.repeat,
            "manifest": str(self.manifest),
            "session_dir": str(self.session_dir),
            "workspace": None if self.workspace is None else str(self.workspace),
            "model": self.model,
            "max_turns": self.max_turns,
            "timeout": self.timeout,
            "check_timeout": self.check_timeout,
            "budget": None if self.budget is None else dict(self.budget),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRequest:
        workspace = data.get("workspace")
        return cls(
            eval_name=str(data["eval_name"]),
            task=TaskSpec.from_dict(cast(Mapping[str, Any], data["task"])),
            repeat=int(data["repeat"]),
            manifest=Path(data["manifest"]),
            session_dir=Path(data["session_dir"]),
            workspace=None if workspace is None else Path(workspace),
            model=data.get("model"),
            max_turns=data.get("max_turns"),
            timeout=float(data["timeout"]),
            check_timeout=float(data["check_timeout"]),
            budget=data.get("budget"),
        )
