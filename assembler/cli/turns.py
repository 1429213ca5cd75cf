"""One run of an agent on the terminal, as `run -p` and the interactive session show
it: the events printed (or sent as JSON lines), a spinner while `-p` waits (in the
interactive session while the model thinks), the banner before and the session's
file after."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import click

from assembler.cli.display import EventPrinter
from assembler.cli.spinner import Spinner, spinner_wanted
from assembler.runner.events import (
    Event,
    RunEnd,
    RunStart,
    ToolCallProposed,
    ToolCallResult,
    TurnStart,
)
from assembler.text import terminal_json, terminal_safe

if TYPE_CHECKING:
    from assembler.agent.agent import Agent


async def drive(
    agent: Agent,
    prompt: str | None,
    as_json: bool,
    max_turns: int | None,
    *,
    answer_only: bool = False,
    printer: EventPrinter | None = None,
    ends: list[RunEnd] | None = None,
    hide_reasoning: bool = False,
    typing: Callable[[], bool] | None = None,
) -> str:
    """Run `prompt` (the manifest's `task` when None), showing its events; the run's
    end reason ("error" if it never ended). The run's end event is added to `ends`.
    `typing`: whether a person is typing a line now (the spinner waits meanwhile)."""
    printer = printer or EventPrinter(
        answer_only=answer_only,
        typed=agent.io.output is not None,
        hide_reasoning=hide_reasoning,
    )
    reason = "error"
    # -p on a terminal: a sign of life on stderr while the model (or a tool) works;
    # interactive: while the model thinks, when the reply streams to the terminal too
    wanted = not as_json and spinner_wanted() and (answer_only or _is_terminal(sys.stdout))
    spinner = Spinner(sys.stderr, hold=typing) if wanted else None
    drawing = asyncio.ensure_future(spinner.run()) if spinner is not None else None
    running: list[str] = []  # tools proposed and not finished: what the spinner waits for
    try:
        async for event in agent.stream(prompt, max_turns=max_turns):
            if spinner is not None and answer_only:
                spinner.touch(waiting_for(event, running))
            elif spinner is not None and isinstance(event, RunStart | TurnStart):
                spinner.touch("thinking")  # a request goes out: until its first token
            elif spinner is not None:
                spinner.pause()
            if as_json:
                click.echo(terminal_json(event.to_dict()))
            else:
                printer.show(event)
            if isinstance(event, RunEnd):
                reason = event.reason
                if ends is not None:
                    ends.append(event)
    finally:
        if drawing is not None:
            drawing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drawing
    return reason


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def waiting_for(event: Event, running: list[str]) -> str:
    """What the spinner says after `event`: the tools still running, or the model."""
    if isinstance(event, ToolCallProposed):
        running.append(event.call.name)
    elif isinstance(event, ToolCallResult) and event.call.name in running:
        running.remove(event.call.name)
    return f"running {', '.join(running)}" if running else "waiting for the model"


def banner(agent: Agent, *, quiet: bool, resumed: bool = False) -> None:
    """Which agent, which model, where requests go (a manifest's `base_url` is always
    shown, so a manifest cannot redirect requests unseen), which workspace; the
    session continued; and a permission mode other than the default (`bypass` even
    with `--json`: stderr is free, and nobody should run it unawares)."""
    state = agent.state()
    mode = state.permission_mode or "default"
    if mode == "bypass":
        click.secho(
            "permission mode: bypass (every call that no deny rule stops runs without asking)",
            err=True,
            fg="red",
        )
    if quiet:
        return
    where = f" via {state.endpoint}" if state.endpoint else ""
    click.secho(
        terminal_safe(f"{state.name} · {state.model}{where} · {state.workspace}"),
        err=True,
        dim=True,
    )
    if mode not in ("default", "bypass"):
        click.secho(f"permission mode: {mode}", err=True, dim=True)
    if resumed and state.session is not None:
        forked = state.parent_session
        how = f"forked from {forked}" if forked else "resumed"
        click.secho(
            terminal_safe(
                f"session {state.session.id} ({how}, {len(state.messages)} messages so far)"
            ),
            err=True,
            dim=True,
        )


def session_note(agent: Agent, quiet: bool) -> None:
    if agent.session is not None and not quiet:
        click.secho(terminal_safe(f"session: {agent.session.path}"), err=True, dim=True)
