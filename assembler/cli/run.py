"""`assemble run`: one prompt to completion, or an interactive session."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from assembler.cli.common import (
    agent_options,
    ask_trust,
    echo_new_issues,
    enter_workspace,
    load_reporting,
    loader_flags,
)
from assembler.cli.main import report_error
from assembler.cli.spinner import Spinner, spinner_wanted
from assembler.errors import AssemblerError
from assembler.text import terminal_json, terminal_safe

if TYPE_CHECKING:
    from assembler.agent.agent import Agent
    from assembler.extensions.api import Command
    from assembler.runner.events import Event


@click.command(
    epilog="\b\nExample:\n"
    '  assemble run agents/reviewer.yaml -p "review the last commit"\n'
    "  assemble run agents/reviewer.yaml --model anthropic:claude-sonnet-4-5"
)
@click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-p", "--prompt", "prompt", help="Run this prompt to completion, print the answer and exit."
)
@click.option("--json", "as_json", is_flag=True, help="Print the event stream as JSON lines.")
@click.option(
    "--max-turns", type=click.IntRange(min=1), help="Model requests per prompt before stopping."
)
@agent_options
def run(
    manifest: Path,
    prompt: str | None,
    as_json: bool,
    model: str | None,
    max_turns: int | None,
    session_dir: Path | None,
    no_session: bool,
    trust: bool,
    **resources: Any,
) -> None:
    """Run MANIFEST's agent on a prompt (-p), or interactively.

    Interactive: type a message; Ctrl-C cancels the current turn, /exit (or Ctrl-D)
    leaves. Tool calls and results are shown on stderr.
    """
    from assembler.agent.build import build_agent
    from assembler.tools.processes import install_exit_handlers

    install_exit_handlers()  # SIGTERM/SIGHUP/exit stop every running tool process
    flags = loader_flags(resources)
    shown = load_reporting(manifest, flags)
    session_dir = enter_workspace(shown.manifest, session_dir)
    agent = build_agent(
        shown.manifest,
        model=model,
        flags=flags,
        session_dir=session_dir,
        record_session=not no_session,
        trust=True if trust else None,
        ask_trust=ask_trust,
    )
    _banner(agent, quiet=as_json)
    if not as_json:  # the build's diagnostics now, each once (JSON keeps them as events)
        echo_new_issues(agent.parts.pending_diagnostics(), shown.issues, manifest)
    if prompt is not None:
        reason = asyncio.run(_one_shot(agent, prompt, as_json, max_turns))
        if reason != "completed":
            sys.exit(1)
        return
    _interactive(agent, as_json, max_turns)


def _banner(agent: Agent, *, quiet: bool) -> None:
    """Which agent, which model, where requests go (a manifest's `base_url` is always
    shown, so a manifest cannot redirect requests unseen), which workspace."""
    if quiet:
        return
    endpoint = agent.runner.endpoint
    where = f" via {endpoint}" if endpoint else ""
    click.secho(
        terminal_safe(
            f"{agent.name} · {agent.provider.name}{where} · {agent.manifest.workspace.resolve()}"
        ),
        err=True,
        dim=True,
    )


async def _drive(
    agent: Agent, prompt: str, as_json: bool, max_turns: int | None, *, answer_only: bool = False
) -> str:
    from assembler.cli.display import EventPrinter
    from assembler.runner.events import RunEnd

    printer = EventPrinter(answer_only=answer_only)
    reason = "error"
    # -p on a terminal: a sign of life on stderr while the model (or a tool) works
    spinner = Spinner(sys.stderr) if answer_only and not as_json and spinner_wanted() else None
    drawing = asyncio.ensure_future(spinner.run()) if spinner is not None else None
    running: list[str] = []  # tools proposed and not finished: what the spinner waits for
    try:
        async for event in agent.stream(prompt, max_turns=max_turns):
            if spinner is not None:
                spinner.touch(_waiting_for(event, running))
            if as_json:
                click.echo(terminal_json(event.to_dict()))
            else:
                printer.show(event)
            if isinstance(event, RunEnd):
                reason = event.reason
    finally:
        if drawing is not None:
            drawing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drawing
    return reason


def _waiting_for(event: Event, running: list[str]) -> str:
    """What the spinner says after `event`: the tools still running, or the model."""
    from assembler.runner.events import ToolCallProposed, ToolCallResult

    if isinstance(event, ToolCallProposed):
        running.append(event.call.name)
    elif isinstance(event, ToolCallResult) and event.call.name in running:
        running.remove(event.call.name)
    return f"running {', '.join(running)}" if running else "waiting for the model"


async def _one_shot(agent: Agent, prompt: str, as_json: bool, max_turns: int | None) -> str:
    try:
        return await _drive(agent, prompt, as_json, max_turns, answer_only=True)
    finally:
        await agent.aclose()
        _session_note(agent, as_json)


def _session_note(agent: Agent, quiet: bool) -> None:
    if agent.session is not None and not quiet:
        click.secho(terminal_safe(f"session: {agent.session.path}"), err=True, dim=True)


def _interactive(agent: Agent, as_json: bool, max_turns: int | None) -> None:
    """A read-eval loop on one event loop, so servers and sessions live across turns.

    `asyncio.Runner` turns Ctrl-C during a turn into cancelling that turn's task; the
    runner then answers the pending tool calls as cancelled, so the conversation
    stays valid and the next message continues it.
    """
    commands = agent.parts.commands
    with asyncio.Runner() as loop:
        try:
            loop.run(agent.start())
            if not as_json:
                click.secho(
                    "Type a message; /exit or Ctrl-D to leave, Ctrl-C cancels a turn.",
                    err=True,
                    dim=True,
                )
            while True:
                try:
                    line = _read_line(as_json)
                except EOFError:
                    click.echo(err=True)
                    break
                except KeyboardInterrupt:
                    click.echo("\n(/exit or Ctrl-D to leave)", err=True)
                    continue
                text = line.strip()
                if not text:
                    continue
                if text in {"/exit", "/quit"}:
                    break
                if text.startswith("/") and text[1:].split(" ", 1)[0] in commands:
                    name, _, rest = text[1:].partition(" ")
                    _command(loop, commands[name], rest)
                    continue
                try:
                    loop.run(_drive(agent, text, as_json, max_turns))
                except KeyboardInterrupt:
                    click.secho("\n(turn cancelled)", err=True, fg="yellow")
                except AssemblerError as e:  # this turn failed; the session goes on
                    report_error(e)
        finally:
            loop.run(agent.aclose())
            _session_note(agent, as_json)


def _read_line(as_json: bool) -> str:
    """The next message; the prompt goes to stderr when stdout carries JSON lines."""
    if not as_json:
        return input("> ")
    click.echo("> ", err=True, nl=False)
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _command(loop: asyncio.Runner, command: Command, argument: str) -> None:
    """Run an extension's `/command`; its failure is reported, the session goes on."""
    import inspect

    try:
        result = command.handler(argument)
        if inspect.isawaitable(result):
            result = loop.run(_await(result))
    except KeyboardInterrupt:
        click.secho("\n(command cancelled)", err=True, fg="yellow")
        return
    except Exception as e:
        click.secho(
            terminal_safe(
                f"error: /{command.name} (extension `{command.extension}`) failed: "
                f"{type(e).__name__}: {e}"
            ),
            err=True,
            fg="red",
        )
        return
    if result is not None:
        click.echo(terminal_safe(str(result)))


async def _await(awaitable: Any) -> Any:
    return await awaitable
