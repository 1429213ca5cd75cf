"""Which session a run continues, and how asks are answered: the options `run` and
`rpc` share (`--continue`, `--resume [ID]`, `--fork ENTRY`, `--permission-mode`).

The session is chosen before the agent is built, so a wrong id fails before anything
starts. `--continue` takes the latest session of this agent in this workspace (a
session of the same agent run on another checkout is not this work); `--resume`
takes an id, an id prefix or a session file, or, without one on a terminal, asks
which; `--fork` starts a new session from an entry of the chosen one (an unambiguous
prefix of the entry id is enough), leaving the original as it was.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from assembler.errors import UsageError
from assembler.manifest.model import Manifest
from assembler.permissions.policy import PERMISSION_MODES
from assembler.text import one_line, terminal_safe

if TYPE_CHECKING:
    from assembler.sessions.store import Session, SessionStore

F = TypeVar("F", bound=Callable[..., Any])

PICK_LIMIT = 20
"""Sessions offered by `--resume` without an id: the most recent ones."""


def session_options(function: F) -> F:
    """`-c/--continue`, `-r/--resume [ID]`, `--fork ENTRY`, `--permission-mode MODE`."""
    options = [
        click.option(
            "-c",
            "--continue",
            "continue_",
            is_flag=True,
            help="Continue the latest session of this agent in this workspace.",
        ),
        click.option(
            "-r",
            "--resume",
            is_flag=False,
            flag_value="",
            default=None,
            metavar="[ID]",
            help="Continue session ID (an id prefix or a session file will do); "
            "without ID, choose one on the terminal.",
        ),
        click.option(
            "--fork",
            metavar="ENTRY",
            help="With --continue or --resume: start a new session from this entry of it "
            "(ids: `assemble sessions show`).",
        ),
        click.option(
            "--permission-mode",
            type=click.Choice(PERMISSION_MODES),
            default="default",
            show_default=True,
            help="What an `ask` rule becomes: asked (default; denied when nobody can "
            "answer), accept-edits, deny-asks, or bypass (everything not denied runs).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@dataclass(frozen=True)
class SessionRequest:
    """What the options asked for, paths made absolute before the workspace is entered."""

    continue_: bool = False
    resume: str | None = None
    fork: str | None = None

    @classmethod
    def from_options(cls, continue_: bool, resume: str | None, fork: str | None) -> SessionRequest:
        if continue_ and resume is not None:
            raise UsageError("--continue and --resume cannot be used together")
        if fork is not None and not continue_ and resume is None:
            raise UsageError("--fork ENTRY starts from an entry of a session: add --resume ID")
        if resume and (resume.endswith(".jsonl") or os.sep in resume):
            resume = str(Path(resume).resolve())
        return cls(continue_, resume, fork)

    @property
    def wanted(self) -> bool:
        return self.continue_ or self.resume is not None


def choose_session(
    request: SessionRequest,
    manifest: Manifest,
    session_dir: Path | None,
    *,
    record: bool,
    can_ask: bool,
) -> tuple[Session | None, str | None]:
    """The `(session, fork)` to give `build_agent`: an open `Session` (or None for a
    new one) and the full id of the entry to fork from."""
    if not request.wanted:
        return None, None
    if not record:
        raise UsageError("--continue and --resume need a session file: leave out --no-session")
    # Imported here: the session store is only needed when a session is continued.
    from assembler.agent.conversation import open_session
    from assembler.sessions.store import SessionStore

    store = SessionStore.for_agent(manifest.name, session_dir)
    if request.continue_:
        latest = store.latest(agent=manifest.name, workspace=manifest.workspace.resolve())
        if latest is None:
            raise UsageError(
                f"no earlier session of `{manifest.name}` in {manifest.workspace.resolve()} "
                "to continue; run without --continue to start one"
            )
        reference: str | Path = latest.path
    elif request.resume:
        reference = request.resume
    else:
        reference = _pick(store, manifest, can_ask)
    session = open_session(store, manifest, reference)
    if request.fork is None:
        return session, None
    return session, _entry_id(session, request.fork)


def session_model(model: str | None, session: Session | None, fork: str | None) -> str | None:
    """`--model` when given, else the model a continued session was switched to last
    (`/model`, recorded in it), else None (the manifest's)."""
    if model is not None or session is None:
        return model
    # Imported here: only a continued session needs it (start-up of the others)
    from assembler.agent.model_switch import recorded_model

    return recorded_model(session, fork)


def _entry_id(session: Session, prefix: str) -> str:
    ids = [entry.id for entry in session.entries()]
    if prefix in ids:
        return prefix
    matches = sorted({entry for entry in ids if entry.startswith(prefix)}) if prefix else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(
            f"session {session.id} has no entry {prefix!r} "
            f"(`assemble sessions show {session.id}` shows them)"
        )
    raise UsageError(f"{prefix!r} matches {len(matches)} entries of session {session.id}")


def _pick(store: SessionStore, manifest: Manifest, can_ask: bool) -> Path:
    """Ask on the terminal which of this agent's recent sessions to continue."""
    from assembler.sessions.catalog import summarise

    if not can_ask:
        raise UsageError(
            "--resume without an ID needs a terminal to choose on; pass an id "
            f"(`assemble sessions list --agent {manifest.name}` lists them)"
        )
    infos = [info for info in store.list() if info.agent == manifest.name][:PICK_LIMIT]
    if not infos:
        raise UsageError(f"no session of `{manifest.name}` to resume yet")
    here = str(manifest.workspace.resolve())
    for number, info in enumerate(infos, 1):
        summary = summarise(info)
        where = "" if summary.workspace in (here, None) else f"  ({summary.workspace})"
        click.echo(
            terminal_safe(
                f"{number:>3}. {summary.last_activity[:16].replace('T', ' ')}  "
                f"{summary.entries:>4} entries  "
                f"{one_line(summary.first_message, 60) or '(no message)'}{where}"
            ),
            err=True,
        )
    choice = click.prompt(
        "Resume which session", type=click.IntRange(1, len(infos)), err=True, default=1
    )
    return Path(infos[choice - 1].path)


def terminal_can_ask() -> bool:
    """A person can answer questions here: stdin and stderr are terminals."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
