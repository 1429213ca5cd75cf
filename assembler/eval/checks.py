"""The checks after a task run, each with evidence a person can act on.

A check says not only whether it passed but why (the first line of the evidence is a
summary, shown in the progress lines): the command's exit code, its last line and the
end of its output, the files that changed, where the text was found (or the start of the
answer it was not found in), which tools were called and what became of each call.

`command` checks run through the `bash` tool itself, in the task's workspace: the same
process handling (a timeout kills everything the command started, and whatever it
left running is stopped before the next check), the same environment without
credentials, and the same kernel sandbox as the agent's own commands. The temporary
workspace's path reads `{workspace}` in their output, so results of the same runs
compare equal wherever they ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.errors import ToolError
from assembler.eval.output_checks import check_output
from assembler.eval.session_checks import files_equal, tool_sequence
from assembler.eval.spec import VALUE_KINDS, Check
from assembler.eval.workspace import differences, digests
from assembler.permissions.path_patterns import PathPattern, compile_path_pattern
from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import SandboxSpec
from assembler.tools.base import ToolContext
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.builtin.search import WorkerTimeout, run_in_worker
from assembler.tools.processes import ProcessScope

EVIDENCE_CHARS = 1500
_SHOWN_PATHS = 10


@dataclass(frozen=True)
class CheckResult:
    kind: str
    check: str
    passed: bool
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "check": self.check,
            "passed": self.passed,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        return cls(str(data["kind"]), str(data["check"]), bool(data["passed"]), data["evidence"])


@dataclass(frozen=True)
class CallSummary:
    """One tool call the model made: its name, main argument (shortened) and what
    became of it: `ran`, `error`, `blocked by NAME: reason`, or `not run: ...`."""

    name: str
    argument: str
    outcome: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "argument": self.argument, "outcome": self.outcome}

    def show(self) -> str:
        argument = f"({self.argument})" if self.argument else ""
        return f"{self.name}{argument} {self.outcome}"


def unchanged_patterns(checks: Sequence[Check]) -> list[PathPattern]:
    """Every pattern of the `unchanged` checks: what to fingerprint before the run."""
    return [compile_path_pattern(p) for c in checks if c.kind == "unchanged" for p in c.patterns]


async def run_checks(
    checks: Sequence[Check],
    *,
    workspace: Path,
    answer: str,
    calls: Sequence[CallSummary],
    before: Mapping[str, str],
    check_timeout: float,
    output: Any = None,
    sandbox: SandboxSpec | None = None,
) -> list[CheckResult]:
    """Run `checks` in order against the finished run; `before` holds the
    fingerprints `unchanged` compares with; `sandbox` confines `command` checks as it
    confined the agent (None: unconfined)."""
    patterns = unchanged_patterns(checks)
    after = await asyncio.to_thread(digests, workspace, patterns) if patterns else {}
    results = []
    for check in checks:
        if check.kind == "command":
            passed, evidence = await _command(check, workspace, check_timeout, sandbox)
        elif check.kind == "unchanged":
            passed, evidence = _unchanged(check, before, after)
        elif check.kind == "answer_contains":
            passed, evidence = _answer_contains(check, answer)
        elif check.kind == "answer_matches":
            passed, evidence = await _answer_matches(check, answer, check_timeout)
        elif check.kind in VALUE_KINDS:
            passed, evidence = check_output(check, output)
        elif check.kind == "files_equal":
            passed, evidence = await asyncio.to_thread(files_equal, check, workspace)
        elif check.kind == "tool_sequence":
            passed, evidence = tool_sequence(check, calls)
        else:
            passed, evidence = _tool(check, calls)
        results.append(CheckResult(check.kind, check.describe(), passed, evidence))
    return results


async def _command(
    check: Check, workspace: Path, default_timeout: float, spec: SandboxSpec | None
) -> tuple[bool, str]:
    timeout = check.timeout or default_timeout
    sandbox = Sandbox.start(spec, workspace, workspace)
    processes = ProcessScope()
    context = ToolContext(
        workspace=workspace,
        timeout=timeout,
        max_output_bytes=EVIDENCE_CHARS,
        sandbox=sandbox,
        processes=processes,
    )
    try:
        result = await BASH_TOOL.execute({"command": check.argument}, context)
    finally:
        await processes.aclose()
        if sandbox is not None:
            sandbox.close()
    code = result.details.get("exit_code")
    output = _without_notes(result.content)
    for shown in {str(workspace.resolve()), str(workspace)}:  # the same on every machine
        output = output.replace(shown, "{workspace}")
    if result.details.get("timed_out"):
        return False, f"timed out after {timeout:g} s: {_last_line(output)}\n{_tail(output)}"
    if code == 0:
        return True, "exit 0"
    if code is None:  # refused before it ran (no workspace, ...)
        return False, _tail(output)
    return False, f"exit {code}: {_last_line(output)}\n{_tail(output)}"


def _unchanged(
    check: Check, before: Mapping[str, str], after: Mapping[str, str]
) -> tuple[bool, str]:
    patterns = [compile_path_pattern(p) for p in check.patterns]
    changed, removed, added = differences(before, after, patterns)
    parts = [
        f"{label}: {_paths(paths)}"
        for label, paths in (("changed", changed), ("removed", removed), ("added", added))
        if paths
    ]
    if parts:
        return False, "; ".join(parts)
    count = sum(1 for path in before if any(p.matches(path) for p in patterns))
    noun = "file" if count == 1 else "files"
    return True, f"{count} {noun} unchanged"


def _answer_contains(check: Check, answer: str) -> tuple[bool, str]:
    at = answer.find(check.argument)
    if at >= 0:
        return True, f"found at character {at}: {_around(answer, at, len(check.argument))}"
    return False, f"not in the answer ({len(answer)} characters): {_start(answer)}"


async def _answer_matches(check: Check, answer: str, timeout: float) -> tuple[bool, str]:
    """The search runs in a worker process, killed after `timeout` (`check_timeout`):
    Python's `re` backtracks, and `^(a+)+$` on a long answer would run for hours
    holding the GIL, past every timeout of the evaluation."""
    request = {"op": "match", "pattern": check.argument, "text": answer}
    try:
        found = (await run_in_worker(request, timeout, "answer_matches"))["match"]
    except WorkerTimeout:
        return False, (
            f"timed out after {timeout:g} s (check_timeout) on the answer ({len(answer)} "
            "characters) and was stopped; a pattern with nested repetition such as "
            f"`(a+)+` can take forever: {_start(answer)}"
        )
    except ToolError as e:
        return False, f"could not be checked: {e}"
    if found is not None:
        start, text = found
        return True, f"matched {_clip(text, 200)!r} at character {start}"
    return False, f"no match in the answer ({len(answer)} characters): {_start(answer)}"


def _tool(check: Check, calls: Sequence[CallSummary]) -> tuple[bool, str]:
    mine = [c for c in calls if c.name == check.argument]
    if check.kind == "tool_called":
        if mine:
            return True, f"called {_times(len(mine))}: " + "; ".join(c.show() for c in mine[:5])
        return False, f"never called; calls: {_census(calls)}"
    if mine:
        return False, f"called {_times(len(mine))}: " + "; ".join(c.show() for c in mine[:5])
    return True, f"never called; calls: {_census(calls)}"


def _census(calls: Sequence[CallSummary]) -> str:
    if not calls:
        return "none"
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    return ", ".join(f"{name} x{count}" for name, count in counts.items())


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _paths(paths: list[str]) -> str:
    shown = ", ".join(paths[:_SHOWN_PATHS])
    more = len(paths) - _SHOWN_PATHS
    return shown + (f" and {more} more" if more > 0 else "")


_BASH_NOTES = (
    "[exit code ",
    "[command timed out",
    "[killed by signal",
    "[output truncated",
    "[the command exited but",
    "[sandbox: ",
)


def _without_notes(content: str) -> str:
    """The command's output without the notes the `bash` tool appends for the model."""
    lines = content.rstrip("\n").split("\n")
    while lines and lines[-1].startswith(_BASH_NOTES):
        lines.pop()
    return "\n".join(lines)


def _last_line(output: str) -> str:
    """The last non-empty line: where test runners put their verdict."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return _clip(lines[-1], 200) if lines and output != "(no output)" else "(no output)"


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else "…" + text[-EVIDENCE_CHARS:]


def _start(text: str) -> str:
    return repr(_clip(text, 200)) if text else "(empty)"


def _around(text: str, at: int, length: int) -> str:
    start, end = max(0, at - 40), min(len(text), at + length + 40)
    prefix, suffix = ("…" if start else ""), ("…" if end < len(text) else "")
    return repr(prefix + text[start:end] + suffix)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
