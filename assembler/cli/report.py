"""How every command shows an `AssemblerError`: one message, never a traceback.

A module of its own so that a command reporting an error and going on (a failed turn
of an interactive session, an eval's usage error) needs nothing of `cli.main`, which
loads the commands.
"""

from __future__ import annotations

import click

from assembler.errors import AssemblerError, ManifestError
from assembler.text import terminal_safe


def report_error(error: AssemblerError) -> None:
    """Print an error the way every command does: one message, no traceback. Messages
    may quote a manifest, a model or a tool, so they are made terminal-safe."""
    if isinstance(error, ManifestError):
        for issue in error.issues:
            click.echo(terminal_safe(issue.format()), err=True)
        count = len(error.errors)
        click.echo(f"{count} error(s); nothing was run", err=True)
        return
    click.echo(terminal_safe(f"error: {error}"), err=True)
