"""Print validation results as text, JSON, or GitHub workflow annotations."""

from __future__ import annotations

import json
from collections.abc import Sequence

from assembler.errors import Issue


def _counted(files: int, skills: int) -> str:
    """`1 manifest`, `2 skills`, `1 manifest and 2 skills`."""
    parts = []
    if files or not skills:
        parts.append(f"{files} manifest" + ("" if files == 1 else "s"))
    if skills:
        parts.append(f"{skills} skill" + ("" if skills == 1 else "s"))
    return " and ".join(parts)


def format_text(issues: Sequence[Issue], files: int, skills: int = 0) -> str:
    lines = [issue.format() for issue in issues]
    errors = sum(1 for i in issues if i.severity == "error")
    warnings = len(issues) - errors
    counted = _counted(files, skills)
    if issues:
        lines.append(f"{errors} error(s), {warnings} warning(s) in {counted}")
    else:
        lines.append(f"{counted} valid")
    return "\n".join(lines)


def format_json(issues: Sequence[Issue], files: int, skills: int = 0) -> str:
    payload: dict[str, object] = {"files": files, **({"skills": skills} if skills else {})}
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


def format_github(issues: Sequence[Issue], files: int, skills: int = 0) -> str:
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
    lines.append(format_text(issues, files, skills).splitlines()[-1])
    return "\n".join(lines)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


FORMATTERS = {"text": format_text, "json": format_json, "github": format_github}
