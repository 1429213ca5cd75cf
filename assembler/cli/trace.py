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
    from assembler.sessions.paths import default_session_dir
    from assembler.sessions.store import SessionStore
    from assembler.user_dirs import default_data_dir

    if target and Path(target).is_file():
        path = Path(target)
        return path if path.name.endswith(".trace.jsonl") else _beside(path)
    if session_dir is not None:
        directories = [session_dir]
    elif agent_name:
        directories = [default_session_dir(agent_name)]
    else:
        root = default_data_dir() / "sessions"
        directories = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    candidates = []
    for directory in directories:
        store = SessionStore(directory)
        if target:
            try:
                return _beside(store.open(target).path)
            except SessionError:
                continue
        latest = store.latest()
        if latest is not None:
            candidates.append(latest)
    if target or not candidates:
        raise SessionError(f"no session {'matching ' + repr(target) if target else 'found'}")
    newest = max(candidates, key=lambda info: info.modified)
    return _beside(newest.path)


def _beside(session_path: Path) -> Path:
    from assembler.errors import SessionError

    trace_path = session_path.with_name(session_path.name.removesuffix(".jsonl") + ".trace.jsonl")
    if not trace_path.is_file():
        raise SessionError(f"session {session_path.name} has no trace (no tool was called)")
    return trace_path
