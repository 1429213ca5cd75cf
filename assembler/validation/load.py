"""`load_manifest`: a manifest ready for use, or one error listing every problem.

It lives with validation, not with parsing, because loading for use means running the
same checks as `assemble validate` (none of which runs project code): a manifest that
validates is a manifest that loads, and `manifest/` never imports `validation/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assembler.errors import ManifestError
from assembler.manifest.model import Manifest
from assembler.validation.validator import validate_file


def load_manifest(
    path: Path | str, *, env: Mapping[str, str] | None = None, skills_profile: str = "lenient"
) -> Manifest:
    """Load a manifest for use, raising one `ManifestError` with every error.

    Runs the same checks as `assemble validate` (none of which runs project code).
    """
    report = validate_file(
        Path(path), env=env, unset_variables="error", skills_profile=skills_profile
    )
    if report.has_errors or report.manifest is None:
        raise ManifestError(report.issues)
    return report.manifest
