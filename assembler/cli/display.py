"""How output looks on a terminal: a run's streamed text on stdout and its tool
activity on stderr; and `for_stdout`, for commands whose output is exact data when
piped (`render`, `memory show`).

Tool calls and results are shown compactly (one line each, arguments clipped), so
the answer stays readable while the work stays visible. `--json` bypasses all of
this and prints the event stream as JSON lines.

Everything shown comes from a model, a tool or an extension, so every line goes
through `terminal_safe`: an escape sequence in a reply is shown, never obeyed.
"""

from __future__ import annotations

import json
from typing import Any

import click

from assembler.pricing import format_cost
from assembler.runner.events import (
    Compacted,
    Diagnostic,
    ErrorEvent,
    Event,
    PlanUpdated,
    ReasoningEvent,
    RunEnd,
    RunStart,
    SubagentEvent,
    TextDeltaEvent,
    ToolCallBlocked,
    ToolCallProposed,
    ToolCallResult,
    TurnEnd,
    TurnStart,
    UserMessageDelivered,
)
from assembler.text import one_line, terminal_safe


def _arguments(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    if len(arguments) == 1:
        return one_line(str(next(iter(arguments.values()))), 80)
    return one_line(json.dumps(arguments, ensure_ascii=False), 80)


class EventPrinter:
    """Prints events for people; remembers whether stdout ends mid-line.

    With `answer_only` (`run -p`), stdout gets the final answer alone, so it can be
    piped: the text of turns that go on to call tools is narration and goes to
    stderr with the tool activity, once the turn shows it is not the answer.
    """

    def __init__(
        self,
        *,
        color: bool | None = None,
        answer_only: bool = False,
        typed: bool = False,
        hide_reasoning: bool = False,
    ) -> None:
        self.color = color
        self.mid_line = False
        self.hide_reasoning = hide_reasoning
        self.thinking = False  # stderr ends mid-line in streamed reasoning
        self.answer_only = answer_only
        self.typed = typed
        """The agent declares `output:` (with `answer_only`, stdout gets the object as
        JSON and nothing else; every text of the model goes to stderr)."""
        self.pending: list[str] = []
        self.blocked: set[str] = set()  # call ids already shown as blocked
        self.errors: set[str] = set()  # error messages already shown

    def _flush_narration(self) -> None:
        text = "".join(self.pending).strip()
        self.pending.clear()
        if text:
            self._err(text, dim=True)

    def _err(self, text: str, fg: str | None = None, *, dim: bool = False) -> None:
        self._end_line()
        self._end_thinking()
        click.secho(terminal_safe(text), err=True, fg=fg, dim=dim, color=self.color)

    def _out(self, text: str, *, nl: bool = True) -> None:
        click.echo(terminal_safe(text), nl=nl)

    def _end_line(self) -> None:
        if self.mid_line:
            click.echo()
            self.mid_line = False

    def _end_thinking(self) -> None:
        if self.thinking:
            click.echo(err=True)
            self.thinking = False

    def show(self, event: Event) -> None:
        if isinstance(event, ReasoningEvent):  # dimmed on stderr: never the answer
            if not self.hide_reasoning and event.text:
                self._end_line()
                click.secho(
                    terminal_safe(event.text), err=True, dim=True, nl=False, color=self.color
                )
                self.thinking = not event.text.endswith("\n")
            return
        self._end_thinking()
        if isinstance(event, TextDeltaEvent):
            if self.answer_only:
                self.pending.append(event.text)
                return
            self._out(event.text, nl=False)
            self.mid_line = not event.text.endswith("\n")
        elif isinstance(event, TurnStart) and event.turn > 1:
            self._end_line()
        elif isinstance(event, TurnEnd) and self.answer_only and self.typed:
            self._flush_narration()  # the typed answer is the object, never text
        elif isinstance(event, TurnEnd) and self.answer_only and not event.message.tool_calls:
            answer = "".join(self.pending)
            self.pending.clear()
            if answer:
                self._out(answer, nl=not answer.endswith("\n"))
        elif isinstance(event, RunEnd):
            self._end_line()
            if event.typed and event.reason == "completed":
                # `-p`: one line of JSON, so `| jq` and `| python -m json.tool` read it;
                # a person in a session reads it indented
                indent = None if self.answer_only else 2
                self._out(json.dumps(event.output, ensure_ascii=False, indent=indent))
            if event.cost_usd is not None:  # a priced model: what the run cost
                self._err(_spent(event), dim=True)
            if event.reason == "error" and event.message in self.errors:
                return  # the error line above said it: each error is printed once
            if event.reason != "completed":
                self._err(f"run ended: {event.reason}: {event.message}", fg="yellow")
        else:
            if isinstance(event, ToolCallProposed | SubagentEvent):
                self._flush_narration()
            if isinstance(event, ToolCallBlocked):
                self.blocked.add(event.call.id)
            elif isinstance(event, ErrorEvent):
                self.errors.add(event.message)
            elif isinstance(event, ToolCallResult) and event.call.id in self.blocked:
                return  # the block line said why it did not run
            activity = _activity(event)
            if activity is not None:
                text, fg = activity
                self._err(text, fg, dim=isinstance(event, SubagentEvent))


def _spent(end: RunEnd) -> str:
    """`cost $0.0123 · 12,345 tokens · 83% of input from the cache`."""
    usage = end.usage
    line = f"cost {format_cost(end.cost_usd or 0.0)} · {usage.input_tokens + usage.output_tokens:,} tokens"
    if usage.cache_read_tokens:
        line += f" · {end.cached_share():.0%} of input from the cache"
    return line


_MARKS = {"completed": "✓", "in_progress": "▸", "pending": "·"}


def _plan(event: PlanUpdated) -> str:
    """The plan, compactly: `plan 1/3 done`, then one line per item with its mark."""
    items = event.entries
    done = sum(item.status == "completed" for item in items)
    lines = [f"plan {done}/{len(items)} done" if items else "plan cleared"]
    for item in items:
        high = " (high)" if item.priority == "high" else ""
        lines.append(f"  {_MARKS[item.status]} {one_line(item.content, 100)}{high}")
    return "\n".join(lines)


def _activity(event: Event, *, sub_agent: bool = False) -> tuple[str, str | None] | None:
    """The one line (and colour) of a tool call, a result, a diagnostic or an error;
    of a sub-agent also its start and an end that was not a completion."""
    if isinstance(event, ToolCallProposed):
        return f"→ {event.call.name} {_arguments(event.call.arguments)}", "cyan"
    if isinstance(event, ToolCallBlocked):
        return f"✗ {event.call.name} blocked by {event.blocked_by}: {event.reason}", "red"
    if isinstance(event, ToolCallResult) and not event.executed:  # unknown tool, bad JSON
        return f"← {event.call.name} not run: {one_line(event.content, 200)}", "red"
    if isinstance(event, ToolCallResult) and event.executed:
        lines = event.content.count("\n") + 1 if event.content else 0
        status = "error" if event.is_error else "ok"
        sandbox = event.details.get("sandbox")
        if isinstance(sandbox, dict) and sandbox.get("refused"):
            status += ", refused by the sandbox"
        first = one_line(event.content.splitlines()[0] if event.content else "", 80)
        return f"← {event.call.name} {status} ({lines} lines) {first}", (
            "red" if event.is_error else None
        )
    if isinstance(event, Diagnostic):
        return f"{event.severity}: {event.message}", "yellow"
    if isinstance(event, UserMessageDelivered):  # a steer or follow-up reached the model
        return f"» {event.source.replace('_', '-')} delivered: {one_line(event.text, 80)}", "cyan"
    if isinstance(event, Compacted):
        return (
            f"compacted ({event.reason}): {event.summarised} messages summarised, "
            f"{event.kept} kept; the context held {event.tokens_before:,} tokens",
            "yellow",
        )
    if isinstance(event, ErrorEvent):
        return f"error: {event.message}", "red"
    if isinstance(event, PlanUpdated):
        return _plan(event), "cyan"
    if sub_agent and isinstance(event, RunStart):
        return f"started: {one_line(event.prompt, 80)}", None
    if sub_agent and isinstance(event, RunEnd) and event.reason != "completed":
        return f"ended: {event.reason}: {event.message}", "yellow"
    if isinstance(event, SubagentEvent):  # its text comes back as the call's result
        inner = _activity(event.event, sub_agent=True)
        return (f"  [{event.path}] {inner[0]}", inner[1]) if inner is not None else None
    return None
