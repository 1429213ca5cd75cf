"""`assemble validate` and `assemble schema`: the CI-facing commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
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
    """Check manifests and eval files (files, or directories searched for *.yaml /
    *.yml manifests and *.eval.yaml files).

    Reports every problem of every file as `file:line:col: severity: message
    [json.path]`. Runs no project code, starts no process, opens no socket.
    Exit 0 when clean, 1 on any error (or warning with --strict), 2 on usage errors.
    """
    from assembler.eval.load import validate_eval_file
    from assembler.text import terminal_safe, terminal_safe_json
    from assembler.validation.report import FORMATTERS
    from assembler.validation.validator import find_manifests, is_eval_file, validate_file

    files, issues = find_manifests(paths)
    for file in files:
        if is_eval_file(file):  # with the agent tree it names
            issues.extend(validate_eval_file(file).issues)
        else:
            issues.extend(validate_file(file, skills_profile=skills_profile).issues)
    issues = list(dict.fromkeys(issues))  # an agent both named and used by an eval file
    report = FORMATTERS[output_format](issues, len(files))
    # messages quote the manifests, which anyone may have written: never obeyed
    click.echo(terminal_safe_json(report) if output_format == "json" else terminal_safe(report))
    failing = {"error", "warning"} if strict else {"error"}
    if any(issue.severity in failing for issue in issues):
        sys.exit(1)


@click.command()
def schema() -> None:
    """Print the manifest JSON Schema (JSON Schema 2020-12)."""
    from assembler.manifest.schema import schema_text

    click.echo(schema_text(), nl=False)
