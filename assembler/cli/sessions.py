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
    """List recorded sessions, show their transcripts, turn one into a test."""


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


@sessions.command(
    "to-test",
    epilog="\b\nExample:\n  assemble sessions to-test 20261130T0915 --out evals/fees.eval.yaml\n"
    "  assemble eval evals/fees.eval.yaml",
)
@click.argument("session")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The eval file to write (default: evals/session-ID.eval.yaml).",
)
@click.option("--task-id", help="The task's id (default: session-ID).")
@click.option(
    "--workspace",
    type=click.Path(path_type=Path, file_okay=False),
    help="The workspace as it was when the session started, when the session cannot "
    "rebuild it (no git, changes too large).",
)
@click.option(
    "--agent",
    "agent_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The agent's manifest, when the session's is gone or was built from data.",
)
@click.option(
    "--mode",
    type=click.Choice(["strict", "outcome"]),
    default="strict",
    show_default=True,
    help="strict: any change in what the model sees fails the task; outcome: only the checks.",
)
@click.option("--force", is_flag=True, help="Replace files that exist.")
@SESSION_DIR
def to_test(
    session: str,
    out: Path | None,
    task_id: str | None,
    workspace: Path | None,
    agent_file: Path | None,
    mode: str,
    force: bool,
    session_dir: Path | None,
) -> None:
    """Turn SESSION (an id, an id prefix or a session file) into an eval task that
    replays it offline: the model's side as a replay, what the model saw at each turn,
    the user's prompts, the workspace as the session found it, and checks (the files
    it changed, the tool calls in order, the answer). `assemble eval` on the file
    reports the first thing the agent now sends differently, by name."""
    from assembler.regress.convert import ConvertOptions, convert
    from assembler.sessions.catalog import find_session, session_directories

    found = find_session(session, session_directories(session_dir))
    target = out or Path("evals") / f"session-{found.id}.eval.yaml"
    options = ConvertOptions(
        out=target, task_id=task_id, workspace=workspace, agent=agent_file, mode=mode
    )
    conversion = convert(found.path, options)
    conversion.write(force=force)
    click.echo(
        f"wrote {conversion.eval_file} (task `{conversion.task_id}`, "
        f"{conversion.sessions} session(s) replayed, {len(conversion.files)} files); "
        f"{conversion.scrubber.summary()}",
        err=True,
    )
    for note in conversion.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"run it: assemble eval {conversion.eval_file}", err=True)


def _when(stamp: str) -> str:
    """`2026-11-30T09:15:00.123Z` as `2026-11-30 09:15` (UTC, as stored)."""
    return stamp[:16].replace("T", " ") if len(stamp) >= 16 else stamp or "-"
