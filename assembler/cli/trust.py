"""`assemble trust add|list|remove`: the user's decision, stored outside projects."""

from __future__ import annotations

from pathlib import Path

import click

from assembler.cli.suggest import SuggestingGroup


@click.group(cls=SuggestingGroup, epilog="\b\nExample:\n  assemble trust add .")
def trust() -> None:
    """Trust project directories whose code (extension files, project Python tools,
    MCP stdio commands) may run. Trusting a directory trusts everything below it."""


@trust.command("add", epilog="\b\nExample:\n  assemble trust add ~/code/shop")
@click.argument(
    "directory", type=click.Path(path_type=Path, file_okay=False, exists=True), default="."
)
def add(directory: Path) -> None:
    """Trust DIRECTORY (default: the current one)."""
    from assembler.trust import TrustStore

    store = TrustStore()
    trusted = store.add(directory)
    click.echo(f"trusted {trusted} (recorded in {store.file})")


@trust.command("list", epilog="\b\nExample:\n  assemble trust list")
def list_() -> None:
    """List trusted directories."""
    from assembler.trust import TrustStore

    entries = TrustStore().entries()
    if not entries:
        click.echo("no trusted directories")
    for entry in entries:
        click.echo(f"{entry.path}\t{entry.added}")


@trust.command("remove", epilog="\b\nExample:\n  assemble trust remove ~/code/shop")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
def remove(directory: Path) -> None:
    """Stop trusting DIRECTORY."""
    from assembler.errors import TrustError
    from assembler.trust import TrustStore

    if not TrustStore().remove(directory):
        raise TrustError(f"{directory.resolve()} was not trusted")
    click.echo(f"no longer trusted: {directory.resolve()}")
