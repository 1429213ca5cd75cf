"""Slash commands over ACP: advertised with `available_commands_update`, run when a
prompt starts with one.

The commands are the built-in ones that make sense in an editor (`/compact`,
`/session`, `/model`, `/cost`, as in the terminal) and the extensions' own (`api.register_command`), the built-in winning a
name both have, as in the terminal. The terminal's other commands are the editor's own
business there (a new thread is `session/new`, a mode is `session/set_mode`), so they
are not offered.

A prompt is a command when its text is `/name` or `/name argument` and `name` is
advertised; any other text, `/usr/bin/env is missing` included, goes to the model, as
an editor sends whatever the person typed. A command runs as a turn of its own (after
the turns before it, cancelled like one), and what it says is the turn's message.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)

from assembler.errors import AssemblerError

if TYPE_CHECKING:
    from assembler.agent.agent import Agent

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.S)

BUILTIN: dict[str, tuple[str, str | None]] = {
    "compact": ("Summarise older history to free the context window", "what to keep"),
    "session": ("Session id and file, tokens used, context fill, permission mode", None),
    "model": ("Show the model, or switch to another for the next turns", "provider:name"),
    "cost": ("Tokens, cache use and cost so far, and each turn's budget", None),
}
"""Name -> (description, hint for the argument, None when it takes none)."""


@dataclass(frozen=True)
class Invocation:
    name: str
    argument: str = ""


def available(agent: Agent) -> AvailableCommandsUpdate:
    """The commands `agent` runs, built-in ones first, each extension's after."""
    commands = [_command(name, text, hint) for name, (text, hint) in BUILTIN.items()]
    for name, command in sorted(agent.parts.commands.items()):
        if name not in BUILTIN:
            description = f"{command.description} (extension `{command.extension}`)"
            commands.append(_command(name, description, "argument"))
    return AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=commands
    )


def invocation(text: str, agent: Agent) -> Invocation | None:
    """The command `text` runs, or None when it is a message for the model."""
    match = _COMMAND.fullmatch(text.strip())
    if match is None:
        return None
    name = match.group(1)
    if name not in BUILTIN and name not in agent.parts.commands:
        return None
    return Invocation(name, (match.group(2) or "").strip())


async def run(agent: Agent, command: Invocation) -> str:
    """Run `command`; what it has to say. A failure is the request's error."""
    if command.name == "compact":
        return await _compact(agent, command.argument)
    if command.name == "session":
        return session_text(agent)
    if command.name == "model":
        return await _model(agent, command.argument)
    if command.name == "cost":
        return "\n".join(agent.state().cost_lines()) + "\n"
    registered = agent.parts.commands[command.name]
    try:
        result: Any = registered.handler(command.argument)
        if inspect.isawaitable(result):
            result = await result
    except Exception as e:  # an extension's bug: the editor shows it, the session goes on
        raise RequestError(
            -32603,
            f"/{command.name} (extension `{registered.extension}`) failed: {type(e).__name__}: {e}",
        ) from e
    return "" if result is None else str(result)


async def _compact(agent: Agent, focus: str) -> str:
    done = await agent.compact(focus or None)
    if done is None:
        return "Nothing to compact: nothing is older than the last message."
    return (
        f"Compacted: {done.summarised} messages summarised, {done.kept} kept verbatim "
        f"(the context held {done.tokens_before:,} tokens)."
    )


async def _model(agent: Agent, label: str) -> str:
    """`/model` shows the model; `/model provider:name` switches to it (checked as
    `--model` is, recorded in the session); a refused name changes nothing."""
    if not label:
        return f"model: {agent.state().model}\n"
    try:
        chosen = await agent.set_model(label)
    except AssemblerError as e:
        return f"{e}; the model stays {agent.state().model}\n"
    return f"model: {chosen} from the next turn on (recorded in the session)\n"


def session_text(agent: Agent) -> str:
    """What `/session` says, one fact a line."""
    state = agent.state()
    lines = state.session_lines()
    usage = state.usage
    lines.append(f"model: {state.model}")
    lines.append(f"tokens used: {usage.input_tokens:,} in, {usage.output_tokens:,} out")
    lines.append(state.context_line())
    lines.append(f"permission mode: {state.permission_mode or 'default'}")
    return "\n".join(lines) + "\n"


def _command(name: str, description: str, hint: str | None) -> AvailableCommand:
    takes = (
        AvailableCommandInput(root=UnstructuredCommandInput(hint=hint))
        if hint is not None
        else None
    )
    return AvailableCommand(name=name, description=description, input=takes)
