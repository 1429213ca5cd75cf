"""One task run's result (`RunRecord`), and the results file: one JSON line per run.

The file is append-only: a run's line is written whole and flushed as soon as the
run ends, so an interruption loses only the runs in flight. Reading skips a torn or
corrupt line (counted), and when a run was recorded twice (`--rerun-failed`) the later
line wins. Only the process that started the evaluation writes the file; Dask
workers send their records back to it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from assembler.errors import UsageError
from assembler.eval.checks import CallSummary, CheckResult

Status = Literal["passed", "failed", "error"]

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class RunRecord:
    """What happened in one task run.

    `status`: `passed` (the run completed and every check passed), `failed` (a check
    failed, or the run stopped otherwise than completed: max turns, blocked), `error`
    (no outcome to judge: the agent could not be built, the model endpoint failed, the
    run timed out, the worker died). `reason` is the run's own end reason.
    """

    eval: str
    task: str
    repeat: int
    status: Status
    model: str = ""
    reason: str = ""
    message: str = ""
    error: str = ""
    checks: tuple[CheckResult, ...] = ()
    answer: str = ""
    output: Any = None
    """The typed answer of an agent with `output:` (None: none, or none valid)."""
    turns: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    tool_calls: tuple[CallSummary, ...] = ()
    duration_s: float = 0.0
    timings: Mapping[str, float] = field(default_factory=dict)
    session: str = ""
    worker: str = ""
    started: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    replay: str = ""
    """A replayed session's diagnosis: its first divergence, or that every request
    was as recorded (`assemble sessions to-test`)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.task, self.repeat)

    @property
    def tokens(self) -> int:
        return int(self.usage.get("input_tokens", 0)) + int(self.usage.get("output_tokens", 0))

    def first_failure(self) -> str:
        """One line saying why the run did not pass."""
        if self.error:
            return self.error
        for check in self.checks:
            if not check.passed:
                summary = check.evidence.split("\n", 1)[0]
                return f"{check.check}: {summary}"
        if self.reason and self.reason != "completed":
            return f"the run ended with `{self.reason}`" + (
                f": {self.message}" if self.message else ""
            )
        return "" if self.status == "passed" else "did not pass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval": self.eval,
            "task": self.task,
            "repeat": self.repeat,
            "status": self.status,
            "model": self.model,
            "reason": self.reason,
            "message": self.message,
            "error": self.error,
            "checks": [c.to_dict() for c in self.checks],
            "answer": self.answer,
            **({"output": self.output} if self.output is not None else {}),
            "turns": self.turns,
            "usage": {name: int(self.usage.get(name, 0)) for name in TOKEN_FIELDS},
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "duration_s": round(self.duration_s, 4),
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "session": self.session,
            "worker": self.worker,
            "started": self.started,
            "metadata": dict(self.metadata),
            **({"replay": self.replay} if self.replay else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        status = data["status"]
        if status not in ("passed", "failed", "error"):
            raise ValueError(f"unknown status {status!r}")
        return cls(
            eval=str(data.get("eval", "")),
            task=str(data["task"]),
            repeat=int(data["repeat"]),
            status=status,
            model=str(data.get("model", "")),
            reason=str(data.get("reason", "")),
            message=str(data.get("message", "")),
            error=str(data.get("error", "")),
            checks=tuple(CheckResult.from_dict(c) for c in data.get("checks") or ()),
            answer=str(data.get("answer", "")),
            output=data.get("output"),
            turns=int(data.get("turns", 0)),
            usage={k: int(v) for k, v in (data.get("usage") or {}).items()},
            tool_calls=tuple(
                CallSummary(str(c["name"]), str(c.get("argument", "")), str(c["outcome"]))
                for c in data.get("tool_calls") or ()
            ),
            duration_s=float(data.get("duration_s", 0.0)),
            timings={k: float(v) for k, v in (data.get("timings") or {}).items()},
            session=str(data.get("session", "")),
            worker=str(data.get("worker", "")),
            started=str(data.get("started", "")),
            metadata=dict(data.get("metadata") or {}),
            replay=str(data.get("replay", "")),
        )


@dataclass(frozen=True)
class Recorded:
    """What a results file holds: the latest record of each run, and how many lines
    could not be read."""

    records: dict[tuple[str, int], RunRecord]
    unreadable: int = 0


def read_results(path: Path) -> Recorded:
    """The records in `path` (none when it does not exist yet)."""
    if not path.exists():
        return Recorded({})
    if not path.is_file():
        raise UsageError(f"{path} is not a file")
    latest: dict[tuple[str, int], RunRecord] = {}
    unreadable = 0
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from e
    with handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                record = RunRecord.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                unreadable += 1
                continue
            latest[record.key] = record
    return Recorded(latest, unreadable)


class ResultsWriter:
    """Appends records to the results file, one whole line each, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("a", encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot write {self.path}: {e.strerror or e}") from e
        if self._handle.tell() > 0:
            self._end_torn_line()

    def _end_torn_line(self) -> None:
        """A line cut short by a crash must not swallow the next record."""
        with self.path.open("rb") as reader:
            reader.seek(-1, 2)
            last = reader.read(1)
        if last != b"\n" and self._handle is not None:
            self._handle.write("\n")

    def write(self, record: RunRecord) -> None:
        if self._handle is None:
            self.open()
        assert self._handle is not None
        self._handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def latest_of(records: Iterable[RunRecord]) -> dict[tuple[str, int], RunRecord]:
    latest: dict[tuple[str, int], RunRecord] = {}
    for record in records:
        latest[record.key] = record
    return latest
