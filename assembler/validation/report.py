"""Print validation results as text, JSON, or GitHub workflow annotations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from assembler.errors import Issue


@dataclass(frozen=True)
class Counted:
    """What one `assemble validate` run checked, by kind, for the summary line."""

    manifests: int = 0
    eval_files: int = 0
    skills: int = 0

    @property
    def files(self) -> int:
        """Manifests and eval files (the `files` of `--format json`)."""
        return self.manifests + self.eval_files

    def __str__(self) -> str:
        """`1 manifest`, `2 skills`, or `3 files: 1 manifest, 1 eval file, 1 skill`."""
        parts = [
            _plural(count, noun)
            for count, noun in (
                (self.manifests, "manifest"),
                (self.eval_files, "eval file"),
                (self.skills, "skill"),
            )
            if count
        ]
        if len(parts) > 1:
            return f"{self.files + self.skills} files: " + ", ".join(parts)
        return parts[0] if parts else "0 manifests"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_text(issues: Sequence[Issue], counted: Counted) -> str:
    lines = [issue.format() for issue in issues]
    errors = sum(1 for i in issues if i.severity == "error")
    warnings = len(issues) - errors
    if issues:
        lines.append(f"{errors} error(s), {warnings} warning(s) in {counted}")
    else:
        head, colon, kinds = str(counted).partition(": ")
        lines.append(f"{head} valid{colon}{kinds}")  # `2 files valid: 1 manifest, ...`
    return "\n".join(lines)


def format_json(issues: Sequence[Issue], counted: Counted) -> str:
    payload: dict[str, object] = {
        "files": counted.files,
        "manifests": counted.manifests,
        "eval_files": counted.eval_files,
        **({"skills": counted.skills} if counted.skills else {}),
    }
    payload |= {
        "errors": sum(1 for i in issues if i.severity == "error"),
        "warnings": sum(1 for i in issues if i.severity == "warning"),
        "issues": [
            {
                "file": i.file,
                "line": i.line,
                "column": i.column,
                "severity": i.severity,
                "message": i.message,
                "path": i.path,
            }
            for i in issues
        ],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def format_github(issues: Sequence[Issue], counted: Counted) -> str:
    """`::error file=...,line=...,col=...::message` lines, which GitHub Actions turns
    into annotations on the pull request's diff."""
    lines = []
    for issue in issues:
        props = [f"file={_property(issue.file)}"]
        if issue.line:
            props.append(f"line={issue.line}")
        if issue.column:
            props.append(f"col={issue.column}")
        props.append(f"title={_property('assemble validate')}")
        message = issue.message + (f" [{issue.path}]" if issue.path else "")
        lines.append(f"::{issue.severity} {','.join(props)}::{_data(message)}")
    lines.append(format_text(issues, counted).splitlines()[-1])
    return "\n".join(lines)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


FORMATTERS = {"text": format_text, "json": format_json, "github": format_github}
