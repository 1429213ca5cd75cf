"""`output.schema: {$ref: FILE}`: an output schema kept in a file of the project.

The file is data from the repository, so it is read like a template file: it must
resolve inside the manifest's directory or the workspace, be a regular file of at most
`MAX_SCHEMA_FILE_BYTES`, and parse as YAML (JSON is YAML) with the manifest's safe
loader, which keeps the source positions an issue needs. The loader and `validate`
both read it through here, so the same problem reads the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.errors import Issue, ManifestError
from assembler.manifest.yaml_source import YamlDocument, load_yaml_text
from assembler.safe_read import FileRefused, read_small_text

MAX_SCHEMA_FILE_BYTES = 1024 * 1024


def schema_file_reference(schema: Any) -> str | None:
    """The file an `output.schema` of the form `{$ref: FILE}` names; None for an inline
    schema (a `$ref` starting with `#` points inside the schema itself)."""
    if not isinstance(schema, Mapping) or set(schema) != {"$ref"}:
        return None
    reference = schema["$ref"]
    if not isinstance(reference, str) or reference.startswith("#"):
        return None
    return reference


@dataclass(frozen=True)
class SchemaFile:
    """A schema file read: its document (positions included), or why it could not be:
    `problem` about the file as a whole (said at the manifest's `$ref`), `issues` at
    the file's own lines (a YAML syntax error, a duplicate key)."""

    document: YamlDocument | None
    problem: str = ""
    issues: tuple[Issue, ...] = ()


def read_schema_file(file: Path, roots: Sequence[Path], shown: str) -> SchemaFile:
    """The schema file at `file` (`shown` is how messages name it), or the problem: not
    found, outside `roots`, not a small regular file, not YAML/JSON, not an object."""
    if "#" in file.name or "://" in str(file):
        return SchemaFile(None, "must name a whole file: a fragment or URL is not read")
    try:
        resolved = file.resolve()
        inside = any(resolved.is_relative_to(root.resolve()) for root in roots)
    except (OSError, RuntimeError, ValueError) as e:
        return SchemaFile(None, f"cannot be resolved: {_reason(e)}")
    if not inside:
        return SchemaFile(
            None,
            "is outside the manifest's directory and the workspace; a manifest may only "
            "read project files",
        )
    try:
        text = read_small_text(resolved, MAX_SCHEMA_FILE_BYTES)
    except FileNotFoundError:
        return SchemaFile(None, "not found")
    except (FileRefused, OSError) as e:
        return SchemaFile(None, f"cannot be read: {_reason(e)}")
    try:
        document = load_yaml_text(text, shown, collect=True)
    except ManifestError as e:
        return SchemaFile(None, "is not JSON or YAML", e.issues)
    if any(issue.severity == "error" for issue in document.issues):
        return SchemaFile(None, "is not JSON or YAML", document.issues)
    if not isinstance(document.data, dict):
        return SchemaFile(None, "must hold a JSON Schema object at its root")
    return SchemaFile(document)


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def resolve_relative(base: Path, written: str) -> Path:
    return Path(os.path.normpath(base / os.path.expanduser(written)))
