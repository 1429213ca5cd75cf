"""`assemble init`: a starter project that validates, renders and runs at once."""

from __future__ import annotations

import os
from pathlib import Path

import click

from assembler.starters import TEMPLATES, write_starter
from assembler.text import terminal_safe


@click.command(epilog="\b\nExample:\n  assemble init my-agent --template coding")
@click.argument("directory", type=click.Path(path_type=Path), default=".")
@click.option(
    "--template",
    type=click.Choice(TEMPLATES),
    default="minimal",
    show_default=True,
    help="minimal: a read-only assistant; coding: tools, a context file, a skill and an "
    "evaluation; reviewer: a read-only reviewer with a checklist skill; team: a lead "
    "agent with two sub-agents.",
)
@click.option("--name", help="The agent's name (default: DIRECTORY's name).")
def init(directory: Path, template: str, name: str | None) -> None:
    """Write a starter agent into DIRECTORY (default: the current one).

    The manifest runs offline at once (its model is a scripted replay; a comment shows
    how to switch to openai:, anthropic: or ollama:), and names a copy of the JSON
    Schema in .assembler/ so editors complete its fields; a .gitignore leaves eval
    results out of git. Existing files are never overwritten: if any would be, nothing
    is written (a .gitignore already there is kept as it is).
    """
    starter = write_starter(directory, template, name)
    shown = os.path.relpath(starter.manifest)
    shown = shown if not shown.startswith("..") else str(starter.manifest)
    click.echo(terminal_safe(f"created the {template} agent `{starter.name}`:"))
    for path in starter.files:
        click.echo(terminal_safe(f"  {os.path.relpath(path)}"))
    if starter.suggested:
        click.echo(
            terminal_safe("kept your .gitignore; you may add: " + ", ".join(starter.suggested))
        )
    click.echo("next:")
    click.echo(terminal_safe(f"  assemble validate {shown}"))
    click.echo(terminal_safe(f"  assemble render --dry-run {shown}"))
    # its replay calls tools, and a replay that calls tools runs only when trusted
    click.echo(terminal_safe(f'  assemble run {shown} --trust -p "..."'))
