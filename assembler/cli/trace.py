"""`assemble trace`: what each tool call proposed, what was decided, what ran, and
what the model saw (the latest run by default)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(
    epilog="\b\nExample:\n  assemble trace\n  assemble trace --agent shipping-fixer --json"
)
@click.argument("target", required=False)
@click.option(
    "--agent", "agent_name", help="The agent whose sessions to look in (its manifest `name`)."
)
@click.option(
    "--session-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where session files are.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON-lines records.")
def trace(
    target: str | None, agent_name: str | None, session_dir: Path | None, as_json: bool
) -> None:
    """Show the audit trace of a session.

    TARGET is a session id (or prefix), a session or trace file, or omitted for the
    most recent session (of --agent, or of any agent).
    """
    from assembler.sessions.trace import format_trace_record, read_trace
    from assembler.text import terminal_json, terminal_safe

    path = _trace_path(target, agent_name, session_dir)
    records = read_trace(path)
    click.secho(terminal_safe(f"trace: {path}"), err=True, dim=True)
    if not records:
        click.echo("no tool calls in this session")
    for record in records:  # a session holds a model's and tools' text: never raw
        click.echo(terminal_json(record) if as_json else format_trace_record(record))


def _trace_path(target: str | None, agent_name: str | None, session_dir: Path | None) -> Path:
    from assembler.errors import SessionError
    from assembler.sessions.catalog import latest_session, session_directories
    from assembler.sessions.store import TRACE_SUFFIX, SessionStore

    if target and Path(target).is_file():
        path = Path(target)
        return path if path.name.endswith(TRACE_SUFFIX) else _beside(path)
    if session_dir is None and agent_name:
        directories = [SessionStore.for_agent(agent_name).directory]
    else:
        directories = session_directories(session_dir)
    if target:
        for directory in directories:
            try:
                return _beside(SessionStore(directory).open(target).path)
            except SessionError:
                continue
        raise SessionError(f"no session matching {target!r}")
    latest = latest_session(directories)
    if latest is None:
        raise SessionError("no session found")
    return _beside(latest.path)


def _beside(session_path: Path) -> Path:
    from assembler.errors import SessionError
    from assembler.sessions.records import SUFFIX
    from assembler.sessions.store import TRACE_SUFFIX

    trace_path = session_path.with_name(session_path.name.removesuffix(SUFFIX) + TRACE_SUFFIX)
    if not trace_path.is_file():
        raise SessionError(f"session {session_path.name} has no trace (no tool was called)")
    return trace_path
