"""Entry point of `assemble`: lazy subcommands and the one place errors become exits.

Subcommands are imported only when invoked, so `assemble validate` pays for
validation and nothing else (no model SDK, no MCP client). Every `AssemblerError`
ends here as one readable message and exit code 1; usage errors exit 2 (click's
convention), and so does a `ConfigurationError` (the model named cannot work: an
invalid `--model`, no model, bad provider options); a traceback is a bug.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from assembler.cli.report import report_error
from assembler.cli.suggest import SuggestingGroup
from assembler.errors import AssemblerError, ConfigurationError
from assembler.text import terminal_safe
from assembler.version import __version__

_COMMANDS = {
    "init": ("assembler.cli.init", "init"),
    "validate": ("assembler.cli.validate", "validate"),
    "schema": ("assembler.cli.validate", "schema"),
    "render": ("assembler.cli.render", "render"),
    "run": ("assembler.cli.run", "run"),
    "rpc": ("assembler.cli.rpc", "rpc"),
    "acp": ("assembler.cli.acp", "acp"),
    "trust": ("assembler.cli.trust", "trust"),
    "trace": ("assembler.cli.trace", "trace"),
    "memory": ("assembler.cli.memory", "memory"),
    "eval": ("assembler.cli.eval", "eval_command"),
    "sessions": ("assembler.cli.sessions", "sessions"),
    "doctor": ("assembler.cli.doctor", "doctor"),
    "view": ("assembler.cli.view", "view"),
    "report": ("assembler.cli.report_cmd", "report"),
}

_HELP = {
    "init": "Write a starter agent that validates, renders and runs at once.",
    "validate": "Check manifests, skills and templates without running anything.",
    "schema": "Print the manifest JSON Schema.",
    "render": "Show the exact system prompt and tool schemas.",
    "run": "Run an agent on a prompt, or interactively.",
    "rpc": "Drive an agent over JSON lines on stdin/stdout.",
    "acp": "Serve an agent to editors (Zed, JetBrains) over ACP.",
    "trust": "Trust project directories whose code may run.",
    "trace": "Show the audit trace of a run.",
    "memory": "List, show, add, remove and consolidate memory records.",
    "eval": "Run an agent over an eval file's tasks and report pass rates.",
    "sessions": "List recorded sessions, show their transcripts, turn one into a test.",
    "view": "Look at sessions and eval results in a browser (local, read-only).",
    "report": "Write a session or eval results as one self-contained HTML file.",
    "doctor": "Report what this machine supports for the sandbox.",
}


class LazyGroup(SuggestingGroup):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module = importlib.import_module(target[0])
        command: click.Command = getattr(module, target[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _HELP[name]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="\b\nExample:\n  assemble render --dry-run agents/shipping-fixer.yaml",
)
# the message given: click's default asks gettext for a translation at import time
@click.version_option(__version__, prog_name="assemble", message="%(prog)s, version %(version)s")
def cli() -> None:
    """Turn a YAML manifest into a running AI agent.

    \b
    assemble validate agents/             check every manifest (CI)
    assemble render --dry-run AGENT.yaml  show the exact system prompt
    assemble run AGENT.yaml -p "..."      run it
    """


def plain_output() -> bool:
    """Whether to print without colour: `NO_COLOR` set (https://no-color.org), or a
    `TERM=dumb` terminal. Output that is not a terminal is plain anyway (click strips
    the styles when the stream is not a TTY)."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point."""
    try:
        # `color=False` reaches every click.echo/secho through the context; None
        # leaves it to click (styles only on a terminal)
        return cli.main(
            args=argv,
            prog_name="assemble",
            standalone_mode=False,
            color=False if plain_output() else None,
        )
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except ConfigurationError as e:
        report_error(e)
        sys.exit(2)
    except AssemblerError as e:
        report_error(e)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as e:  # a bug of ours: still one line, with a way to see more
        if os.environ.get("ASSEMBLER_DEBUG"):
            raise
        click.echo(
            terminal_safe(f"internal error: {type(e).__name__}: {e}\n")
            + "This is a bug in agent-assembler; run again with ASSEMBLER_DEBUG=1 to see "
            "the traceback, and please report it.",
            err=True,
        )
        sys.exit(70)


if __name__ == "__main__":
    main()
