"""`assemble validate` and `assemble schema`: the CI-facing commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(
    epilog="\b\nExample:\n  assemble validate agents/\n  assemble validate --strict --format github agents/ examples/shipping/skills/"
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
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
    *.yml manifests and *.eval.yaml files), and skills: a SKILL.md, a skill folder, or
    a directory of skills. With no PATHS, ./agent.yaml.

    Reports every problem of every file as `file:line:col: severity: message
    [json.path]`. Runs no project code, starts no process, opens no socket.
    Exit 0 when clean, 1 on any error (or warning with --strict), 2 on usage errors.
    """
    from assembler.cli.common import manifest_argument
    from assembler.eval.load import validate_eval_file
    from assembler.text import terminal_safe, terminal_safe_json
    from assembler.validation.report import FORMATTERS, Counted
    from assembler.validation.validator import (
        count_skills,
        find_manifests,
        find_skills,
        is_eval_file,
        validate_file,
        validate_skills,
    )

    paths = paths or (manifest_argument(None),)
    files, issues = find_manifests(paths)
    for file in files:
        if is_eval_file(file):  # with the agent tree it names
            issues.extend(validate_eval_file(file).issues)
        else:
            issues.extend(validate_file(file, skills_profile=skills_profile).issues)
    skills = find_skills(paths)
    for skill in skills:
        issues.extend(validate_skills(skill, skills_profile=skills_profile).issues)
    # a sub-agent, or an agent an eval file uses, is validated more than once: each
    # issue is reported once
    issues = list(dict.fromkeys(issues))
    evals = sum(1 for file in files if is_eval_file(file))
    counted = Counted(len(files) - evals, evals, sum(count_skills(skill) for skill in skills))
    report = FORMATTERS[output_format](issues, counted)
    # messages quote the manifests, which anyone may have written: never obeyed
    click.echo(terminal_safe_json(report) if output_format == "json" else terminal_safe(report))
    failing = {"error", "warning"} if strict else {"error"}
    if any(issue.severity in failing for issue in issues):
        sys.exit(1)


@click.command(epilog="\b\nExample:\n  assemble schema --output .assembler/agent.schema.json")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the schema to this file (replaced whole, atomically) instead of stdout.",
)
def schema(output: Path | None) -> None:
    """Print the manifest JSON Schema (JSON Schema 2020-12).

    Its `$id` names the manifest format version (`urn:agent-assembler:schema:agent:1`)
    and stays the same for every release that reads that version.
    """
    from assembler.manifest.schema import schema_text

    if output is None:
        click.echo(schema_text(), nl=False)
        return
    from assembler.errors import UsageError
    from assembler.files import atomic_write

    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(output, schema_text().encode("utf-8"))
    except OSError as e:
        raise UsageError(f"cannot write the schema to {output}: {e.strerror or e}") from e
