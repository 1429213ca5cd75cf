"""A command group that answers a misspelled command with "did you mean"."""

from __future__ import annotations

import click


class SuggestingGroup(click.Group):
    """`assemble rnu` says: No such command 'rnu'. Did you mean 'run'?"""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        commands = self.list_commands(ctx)
        if name and not name.startswith("-") and name not in commands:
            import difflib  # here for start-up cost: only a misspelled command needs it

            close = difflib.get_close_matches(name, commands, n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            ctx.fail(f"No such command '{name}'.{hint} Commands: {', '.join(commands)}.")
        return super().resolve_command(ctx, args)
