"""The `/commands` of an interactive session: the built-in ones and the extensions'.

A line is a command when it is `/name` or `/name argument`, the name a word (so a
path such as `/usr/bin/env is missing` is a message); `//text` sends `/text` to the
model. An unknown command is an error message and is never sent to the model.

`help`, `followup`, `tree`, `session`, `cost` and `model` without a name only look or
queue, so they also work while the agent works; `compact`, `fork`, `new`, `reload`,
`model NAME` and the extensions' commands change the conversation, the model or run
code, so they wait for the turn to end.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from assembler.cli.prompt_changes import prompt_changes
from assembler.cli.transcript import tree_lines, turn_ends
from assembler.errors import ConfigurationError
from assembler.runner.budget import shown_amount
from assembler.text import one_line, terminal_safe

if TYPE_CHECKING:
    from assembler.agent.agent import Agent
    from assembler.agent.state import AgentState
    from assembler.extensions.api import Command

Ask = Callable[[str], Awaitable[str]]

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.S)

BUILTIN: dict[str, tuple[str, str]] = {
    "help": ("/help", "this list"),
    "followup": ("/followup TEXT", "queue TEXT for when the agent would stop"),
    "compact": ("/compact [FOCUS]", "summarise older history (FOCUS: what to keep)"),
    "fork": ("/fork [ENTRY]", "go on in a new session from an earlier answer"),
    "tree": ("/tree", "the session's turns as a tree, branches included"),
    "new": ("/new", "start a new, empty session"),
    "reload": ("/reload", "re-read skills, context files, templates, extensions; show the change"),
    "session": ("/session", "session id, file, model, token usage, context fill"),
    "model": ("/model [NAME]", "the model; NAME (provider:name) for the next turns"),
    "cost": ("/cost", "tokens and cost so far, and the budget left"),
    "exit": ("/exit", "leave (also /quit, Ctrl-D)"),
}
ALIASES = {"quit": "exit", "follow-up": "followup"}
WHILE_RUNNING = frozenset({"help", "followup", "tree", "session", "cost", "exit"})


@dataclass(frozen=True)
class Slash:
    name: str
    argument: str = ""


def only_looks(slash: Slash) -> bool:
    """Whether `slash` may run while the agent works (it changes nothing)."""
    return slash.name in WHILE_RUNNING or (slash.name == "model" and not slash.argument)


def parse(line: str) -> Slash | None:
    """The command `line` is, or None when it is a message."""
    if line.startswith("//"):
        return None
    match = _COMMAND.fullmatch(line.strip())
    if match is None:
        return None
    name = match.group(1)
    return Slash(ALIASES.get(name, name), (match.group(2) or "").strip())


def message_text(line: str) -> str:
    """What a message line sends: `//x` sends `/x`."""
    return line[1:] if line.startswith("//") else line


def error(text: str) -> None:
    click.secho(terminal_safe(f"error: {text}"), err=True, fg="red")


def note(text: str) -> None:
    click.secho(terminal_safe(text), err=True, dim=True)


def unknown(name: str, commands: dict[str, Command]) -> None:
    known = sorted({*BUILTIN, *commands})
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" Did you mean /{close[0]}?" if close else ""
    error(f"unknown command /{name}.{hint} /help lists the commands; //text sends /text")


# -- commands that only look or queue ---------------------------------------------------


def show_help(commands: dict[str, Command]) -> None:
    rows = [BUILTIN[name] for name in BUILTIN]
    rows += [(f"/{c.name}", f"{c.description} (extension `{c.extension}`)")
             for c in sorted(commands.values(), key=lambda c: c.name)]  # fmt: skip
    width = max(len(usage) for usage, _ in rows)
    for usage, description in rows:
        click.echo(terminal_safe(f"  {usage.ljust(width)}  {description}"), err=True)
    note("A line typed while the agent works steers it: delivered after the running tools.")


def follow_up(agent: Agent, text: str) -> None:
    if not text:
        error("/followup needs the text to send")
        return
    agent.follow_up(text)
    when = "when the agent would stop" if agent.streaming else "after your next message's answer"
    note(f"(follow-up queued: delivered {when})")


def show_tree(agent: Agent) -> None:
    if agent.session is None:
        error("this run records no session (--no-session)")
        return
    for line in tree_lines(agent.session):
        click.echo(terminal_safe(line), err=True)


def show_session(agent: Agent) -> None:
    state = agent.state()
    lines = state.session_lines()
    lines.append(f"model: {state.model}" + (f" via {state.endpoint}" if state.endpoint else ""))
    usage = state.usage
    cache = f", {usage.cache_read_tokens:,} cache read" if usage.cache_read_tokens else ""
    lines.append(
        f"tokens used since start: {usage.input_tokens:,} in, {usage.output_tokens:,} out{cache}"
    )
    lines.append(state.context_line())
    if state.steers or state.follow_ups:
        lines.append(f"queued: {len(state.steers)} steer(s), {len(state.follow_ups)} follow-up(s)")
    if state.permission_mode is not None:
        lines.append(
            f"permissions: mode {state.permission_mode}, default {state.permission_default}"
        )
    for line in lines:
        click.echo(terminal_safe(line), err=True)


def show_model(agent: Agent) -> None:
    state = agent.state()
    where = f" via {state.endpoint}" if state.endpoint else ""
    click.echo(terminal_safe(f"model: {state.model}{where}"), err=True)
    note("/model provider:name switches it for the next turns (recorded in the session)")


async def set_model(agent: Agent, name: str) -> None:
    """Switch the model; a model `--model` would refuse is an error, nothing changes."""
    try:
        label = await agent.set_model(name)
    except ConfigurationError as e:
        error(f"{e}; the model stays {agent.state().model}")
        return
    note(f"model: {label} from the next turn on (recorded in the session)")


def show_cost(agent: Agent) -> None:
    for line in cost_lines(agent.state()):
        click.echo(terminal_safe(line), err=True)


def cost_lines(state: AgentState) -> list[str]:
    """`/cost`: tokens and cost since the session started, and each turn's budget."""
    usage = state.usage
    lines = [
        f"tokens: {usage.input_tokens:,} in, {usage.output_tokens:,} out; cache: "
        f"{usage.cache_read_tokens:,} read, {usage.cache_write_tokens:,} written"
    ]
    if state.cost_usd is not None:
        lines.append(f"cost: {_usd(state.cost_usd)} ({state.model})")
    else:
        lines.append(f"cost: unknown (no price for {state.model}: set `model.price`)")
    if state.budget is not None:
        lines.extend(_budget_lines(state.budget))
    return lines


def _budget_lines(budget: Mapping[str, Any]) -> list[str]:
    limits: Mapping[str, Any] = budget.get("limits") or {}
    used: Mapping[str, Any] | None = budget.get("used")
    lines = ["budget of each turn:" if used is None else "budget of each turn (the last one):"]
    for name, limit in limits.items():
        spent = used.get(name) if used is not None else None
        if spent is None:
            lines.append(f"  {name}: {_amount(name, limit)}")
            continue
        left = max(0, limit - spent)
        lines.append(
            f"  {name}: {_amount(name, spent)} of {_amount(name, limit)} used, "
            f"{_amount(name, left)} left"
        )
    return lines


def _usd(value: float) -> str:
    """Dollars to the cent's hundredth; a smaller amount to the millionth."""
    return f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


def _amount(budget: str, value: float) -> str:
    return shown_amount(budget, value, usd=_usd)


def quick(agent: Agent, slash: Slash) -> bool:
    """Run a command that only looks or queues; False when `slash` is not one."""
    if slash.name == "help":
        show_help(agent.parts.commands)
    elif slash.name == "followup":
        follow_up(agent, slash.argument)
    elif slash.name == "tree":
        show_tree(agent)
    elif slash.name == "session":
        show_session(agent)
    elif slash.name == "cost":
        show_cost(agent)
    elif slash.name == "model" and not slash.argument:
        show_model(agent)
    else:
        return False
    return True


# -- commands that change the conversation or run code -------------------------------


async def compact(agent: Agent, focus: str) -> None:
    note("(compacting: the model summarises the older history)")
    done = await agent.compact(focus or None)
    if done is None:
        note("nothing to compact: nothing is older than the last message")
        return
    note(
        f"compacted: {done.summarised} messages summarised, {done.kept} kept verbatim "
        f"(the context held {done.tokens_before:,} tokens)"
    )


async def fork(agent: Agent, argument: str, ask: Ask) -> None:
    session = agent.session
    if session is None:
        error("this run records no session (--no-session), so there is nothing to fork")
        return
    entry = argument or await _pick_answer(agent, ask)
    if not entry:
        return
    ids = [e.id for e in session.entries()]
    matches = [i for i in dict.fromkeys(ids) if i.startswith(entry)]
    if entry not in ids and len(matches) != 1:
        error(f"no entry {entry!r} in this session" if not matches else f"{entry!r} is ambiguous")
        return
    target = entry if entry in ids else matches[0]
    old = session.id
    forked = agent.fork(target)
    note(f"forked: new session {forked.id} from {old} at entry {target}; the original is unchanged")


async def _pick_answer(agent: Agent, ask: Ask) -> str:
    assert agent.session is not None
    answers = turn_ends(agent.session)[-20:]
    if not answers:
        error("no answer to fork from yet")
        return ""
    for number, (entry, asked) in enumerate(answers, 1):
        text = str(entry.payload.get("message", {}).get("text", ""))
        click.echo(
            terminal_safe(
                f"{number:>3}. {entry.id}  you: {one_line(asked, 40)}  →  {one_line(text, 40)}"
            ),
            err=True,
        )
    line = (await ask(f"fork after which answer? [1-{len(answers)}, Enter cancels] ")).strip()
    if not line:
        note("(not forked)")
        return ""
    if line.isdigit() and 1 <= int(line) <= len(answers):
        return answers[int(line) - 1][0].id
    return line  # an entry id


def reload(agent: Agent) -> None:
    """Re-read the resources and say which sections of the prompt changed."""
    before = agent.system_prompt()
    agent.reload()
    changes = prompt_changes(before, agent.system_prompt())
    if not changes:
        note("reloaded: the system prompt is unchanged")
        return
    note("reloaded; the system prompt changed:")
    for line in changes:
        click.echo(terminal_safe(f"  {line}"), err=True)


def new_session(agent: Agent) -> None:
    old = agent.session.id if agent.session is not None else None
    session = agent.new_session()
    note(f"new session {session.id}" + (f" (the last one was {old})" if old else ""))


async def extension(command: Command, argument: str) -> None:
    """Run an extension's `/command`; its failure is reported, the session goes on."""
    try:
        result: Any = command.handler(argument)
        if inspect.isawaitable(result):
            result = await result
    except Exception as e:
        error(f"/{command.name} (extension `{command.extension}`) failed: {type(e).__name__}: {e}")
        return
    if result is not None:
        click.echo(terminal_safe(str(result)))


async def slow(agent: Agent, slash: Slash, ask: Ask) -> None:
    """Run a command that must wait for an idle agent (its errors are the caller's to
    report)."""
    if slash.name == "compact":
        await compact(agent, slash.argument)
    elif slash.name == "fork":
        await fork(agent, slash.argument, ask)
    elif slash.name == "new":
        new_session(agent)
    elif slash.name == "reload":
        reload(agent)
    elif slash.name == "model":
        await set_model(agent, slash.argument)
    else:
        await extension(agent.parts.commands[slash.name], slash.argument)
