"""`assemble sessions`: list the recorded sessions and show one as a transcript.

Session files hold what a model, tools and users wrote: on a terminal everything is
shown through `terminal_safe` (escape sequences shown, never obeyed); a pipe or a file
gets the text unchanged, and `--format json` output reads back as the same data.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from assembler.cli.suggest import SuggestingGroup
from assembler.cli.terminal import for_stdout
from assembler.text import one_line

SESSION_DIR = click.option(
    "--session-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Look only in this directory (as given to `run --session-dir`).",
)


@click.group(cls=SuggestingGroup, epilog="\b\nExample:\n  assemble sessions list")
def sessions() -> None:
    """List recorded sessions and show their transcripts."""


@sessions.command(
    "list",
    epilog="\b\nExample:\n  assemble sessions list\n"
    "  assemble sessions list --agent shipping-fixer --format json",
)
@click.option("--agent", "agent_name", help="Only this agent's sessions (its manifest `name`).")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@SESSION_DIR
def list_(agent_name: str | None, limit: int | None, fmt: str, session_dir: Path | None) -> None:
    """List sessions, the most recently active first: id, agent, workspace, started,
    last activity, entries and the first user message. Across every agent unless
    --agent is given."""
    from assembler.sessions.catalog import list_sessions, session_directories

    found = list_sessions(session_directories(session_dir), agent=agent_name, limit=limit)
    if fmt == "json":
        text = json.dumps([s.to_dict() for s in found], ensure_ascii=False, indent=2)
        click.echo(for_stdout(text, json_text=True))
        return
    if not found:
        click.echo("no sessions" + (f" of agent `{agent_name}`" if agent_name else ""), err=True)
        return
    for summary in found:
        origin = ""
        if summary.delegated_from is not None:
            origin = f"  ↳ from {summary.delegated_from.get('session')}"
        elif summary.parent_session is not None:
            origin = f"  fork of {summary.parent_session}"
        click.echo(
            for_stdout(
                f"{summary.id}  {summary.agent}  {_when(summary.started)} → "
                f"{_when(summary.last_activity)}  {summary.entries} entries{origin}\n"
                f"    {summary.workspace or '-'}\n"
                f"    {one_line(summary.first_message, 100) or '(no message)'}"
            ),
            color=True,
        )


@sessions.command(
    "show",
    epilog="\b\nExample:\n  assemble sessions show\n"
    "  assemble sessions show 20261130T0915 --format md > session.md",
)
@click.argument("session", required=False)
@click.option("--agent", "agent_name", help="With no SESSION: the latest of this agent.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "md"]),
    default="text",
    show_default=True,
)
@SESSION_DIR
def show(session: str | None, agent_name: str | None, fmt: str, session_dir: Path | None) -> None:
    """Show SESSION (an id, an id prefix or a session file; the latest when left out)
    as a transcript: the conversation, tool calls and results shortened, compactions,
    forks and sub-agent sessions."""
    from assembler.cli.transcript import json_transcript, markdown_transcript, text_transcript
    from assembler.errors import SessionError
    from assembler.sessions.catalog import find_session, latest_session, session_directories
    from assembler.sessions.store import Session

    directories = session_directories(session_dir)
    if session is None:
        latest = latest_session(directories, agent=agent_name)
        if latest is None:
            raise SessionError("no sessions yet" + (f" of `{agent_name}`" if agent_name else ""))
        opened = Session.load(latest.path)
    else:
        opened = find_session(session, directories)
    if fmt == "json":
        text = json.dumps(json_transcript(opened), ensure_ascii=False, indent=2)
        click.echo(for_stdout(text, json_text=True))
    else:  # color=True: click would strip escape sequences from a pipe; the text is the
        # session's, unchanged, there (on a terminal `for_stdout` has escaped them)
        shown = markdown_transcript(opened) if fmt == "md" else text_transcript(opened)
        click.echo(for_stdout(shown), nl=False, color=True)


def _when(stamp: str) -> str:
    """`2026-11-30T09:15:00.123Z` as `2026-11-30 09:15` (UTC, as stored)."""
    return stamp[:16].replace("T", " ") if len(stamp) >= 16 else stamp or "-"
