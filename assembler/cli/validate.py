"""`assemble validate` and `assemble schema`: the CI-facing commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(
    epilog="\b\nExample:\n  assemble validate agents/\n  assemble validate --strict --format github agents/ skills/"
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github: workflow-command annotations for GitHub Actions.",
)
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option(
    "--skills-profile",
    type=click.Choice(["lenient", "spec"]),
    default="lenient",
    show_default=True,
    help="spec: unknown SKILL.md frontmatter keys are errors, as in the Agent Skills reference"
    " validator.",
)
def validate(
    paths: tuple[Path, ...], output_format: str, strict: bool, skills_profile: str
) -> None:
    """Check manifests (files, or directories searched for *.yaml / *.yml manifests),
    and skills: a SKILL.md, a skill folder, or a directory of skills.

    Reports every problem of every file as `file:line:col: severity: message
    [json.path]`. Runs no project code, starts no process, opens no socket.
    Exit 0 when clean, 1 on any error (or warning with --strict), 2 on usage errors.
    """
    from assembler.validation.report import FORMATTERS
    from assembler.validation.validator import (
        count_skills,
        find_manifests,
        find_skills,
        validate_file,
        validate_skills,
    )

    files, issues = find_manifests(paths)
    for file in files:
        issues.extend(validate_file(file, skills_profile=skills_profile).issues)
    skills = find_skills(paths)
    for skill in skills:
        issues.extend(validate_skills(skill, skills_profile=skills_profile).issues)
    counted = sum(count_skills(skill) for skill in skills)
    click.echo(FORMATTERS[output_format](issues, len(files), counted))
    failing = {"error", "warning"} if strict else {"error"}
    if any(issue.severity in failing for issue in issues):
        sys.exit(1)


@click.command(epilog="\b\nExample:\n  assemble schema > agent.schema.json")
def schema() -> None:
    """Print the manifest JSON Schema (JSON Schema 2020-12)."""
    from assembler.manifest.schema import schema_text

    click.echo(schema_text(), nl=False)
