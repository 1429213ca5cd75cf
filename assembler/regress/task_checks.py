"""The checks a converted task starts with, derived from what the session did.

* `files_equal`: every file the session changed ends as it did (from the last
  `run_end`'s `workspace_end`): its text when short, a file beside the eval for a long
  or binary one, its sha256 when the session did not keep the content, `null` for a
  file it deleted;
* `tool_sequence`: the same tool calls, by name, in the same order;
* `answer_contains`: the final answer, whole.

A session whose last run was cut off (killed, or forked mid-run) recorded no end
state, so it gets no `files_equal`; the notes say so.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.regress.recording import Recording
from assembler.regress.scrub import Scrubber
from assembler.regress.texts import TEXT_LIMIT

Normalize = Callable[[str], str]


@dataclass
class Notes:
    files: dict[Path, str | bytes] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)


def derived_checks(
    recording: Recording,
    model_side: Normalize,
    files_dir: Path,
    base: Path,
    scrubber: Scrubber,
) -> tuple[list[dict[str, Any]], Notes]:
    notes = Notes()
    checks: list[dict[str, Any]] = []
    expected = _files(recording, files_dir, base, scrubber, notes)
    if expected:
        checks.append({"files_equal": expected})
    names = [call.name for call in recording.calls]
    if names:
        checks.append({"tool_sequence": names})
    end = recording.last_end
    if recording.completed and end is not None and end.get("reason") == "completed":
        answer = str(end.get("text") or "")
        if answer.strip():
            checks.append({"answer_contains": model_side(answer)})
    return checks, notes


def _files(
    recording: Recording, folder: Path, base: Path, scrubber: Scrubber, notes: Notes
) -> dict[str, Any]:
    if not recording.completed:
        notes.messages.append(
            "the session's last run was cut off, so what it changed was never recorded: "
            "no `files_equal` check"
        )
        return {}
    end = recording.workspace_end
    if end is None:
        return {}
    expected: dict[str, Any] = {}
    for record in end.get("changed", ()):
        path = str(record.get("path", ""))
        if not path:
            continue
        if record.get("deleted"):
            expected[path] = None
        elif "text" in record:
            text = scrubber.text(str(record["text"]))
            if len(text) <= TEXT_LIMIT:
                expected[path] = text
            else:
                expected[path] = {"file": _write(notes, folder / path, text, base)}
        elif "base64" in record:
            data = base64.b64decode(str(record["base64"]))
            expected[path] = {"file": _write(notes, folder / path, data, base)}
        elif "sha256" in record:
            expected[path] = {"sha256": str(record["sha256"])}
            notes.messages.append(f"{path}: too large to record, checked by its sha256 only")
    return expected


def _write(notes: Notes, path: Path, content: str | bytes, base: Path) -> str:
    notes.files[path] = content
    return path.relative_to(base).as_posix()
