"""The checks a converted session starts with (`assemble sessions to-test`), each in
its own function: `files_equal` (files end with the recorded contents) and
`tool_sequence` (the same tool calls, by name, in the same order).

Evidence names the first thing that differs: the file and its first changed line (or
that it is missing, or should not exist), the position of the first call that differs.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from assembler.eval.spec import Check


class Named(Protocol):
    """A call as the checks see it (`checks.CallSummary`): its tool's name."""

    @property
    def name(self) -> str: ...


_SHOWN = 10


def files_equal(check: Check, workspace: Path) -> tuple[bool, str]:
    """Every named file holds what the check says (`None`: the file must not exist)."""
    expected: Mapping[str, Any] = check.expected or {}
    problems: list[str] = []
    for name, wanted in expected.items():
        problem = _file_problem(workspace / name, name, wanted)
        if problem:
            problems.append(problem)
    if problems:
        more = len(problems) - _SHOWN
        shown = "; ".join(problems[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")
        return False, f"{len(problems)} of {len(expected)} files differ: {shown}"
    noun = "file" if len(expected) == 1 else "files"
    return True, f"{len(expected)} {noun} as expected"


def _file_problem(path: Path, name: str, wanted: Any) -> str:
    present = path.is_file() or path.is_symlink()
    if wanted is None:
        return f"{name} exists and should not" if present else ""
    if not present:
        return f"{name} is missing"
    try:
        data = path.read_bytes()
    except OSError as e:
        return f"{name} cannot be read: {e.strerror}"
    if isinstance(wanted, Mapping) and "sha256" in wanted:
        digest = hashlib.sha256(data).hexdigest()
        return (
            ""
            if digest == wanted["sha256"]
            else f"{name} has sha256 {digest[:12]}…, not {str(wanted['sha256'])[:12]}…"
        )
    if isinstance(wanted, Mapping) and "file" in wanted:
        try:
            expected = Path(str(wanted["file"])).read_bytes()
        except OSError as e:
            return f"{name}: its expected content {wanted['file']} cannot be read: {e.strerror}"
    else:
        expected = str(wanted).encode("utf-8")
    if data == expected:
        return ""
    return f"{name} {_first_difference(expected, data)}"


def _first_difference(expected: bytes, actual: bytes) -> str:
    try:
        old, new = expected.decode("utf-8").split("\n"), actual.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return f"differs ({len(actual)} bytes, expected {len(expected)})"
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        parts = []
        if i2 > i1:
            parts.append(f"expected `{_clip(old[i1])}`")
        if j2 > j1:
            parts.append(f"got `{_clip(new[j1])}`")
        return f"differs at line {min(i1, j1) + 1}: " + ", ".join(parts)
    return "differs in line endings or trailing bytes"


def tool_sequence(check: Check, calls: Sequence[Named]) -> tuple[bool, str]:
    """The model's calls, by name, are exactly the expected ones in order."""
    expected = [str(name) for name in check.expected or ()]
    actual = [call.name for call in calls]
    if actual == expected:
        return True, f"{_count(len(actual))} in order: {_names(actual)}"
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            return False, f"call {index + 1} is `{got}`, expected `{want}`; calls: {_names(actual)}"
    if len(actual) < len(expected):
        return (
            False,
            f"{_count(len(actual))}, expected {len(expected)}: `{expected[len(actual)]}` never came; calls: {_names(actual)}",
        )
    return (
        False,
        f"{_count(len(actual))}, expected {len(expected)}: call {len(expected) + 1} `{actual[len(expected)]}` is extra; calls: {_names(actual)}",
    )


def _count(calls: int) -> str:
    return "1 call" if calls == 1 else f"{calls} calls"


def _names(names: Sequence[str]) -> str:
    shown = " ".join(names[:20])
    return (shown + f" … ({len(names)} calls)") if len(names) > 20 else (shown or "none")


def _clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= 80 else line[:79] + "…"
