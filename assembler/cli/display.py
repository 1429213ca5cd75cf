"""How a run looks on a terminal: streamed text on stdout, tool activity on stderr.

Tool calls and results are shown compactly (one line each, arguments clipped), so
the answer stays readable while the work stays visible. `--json` bypasses all of
this and prints the event stream as JSON lines.
"""

from __future__ import annotations

import json
from typing import Any

import click

from assembler.runner.events import (
    Diagnostic,
    ErrorEvent,
    Event,
    RunEnd,
    TextDeltaEvent,
    ToolCallBlocked,
    ToolCallProposed,
    ToolCallResult,
    TurnEnd,
    TurnStart,
)
from assembler.text import one_line


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

    def __init__(self, *, color: bool | None = None, answer_only: bool = False) -> None:
        self.color = color
        self.mid_line = False
        self.answer_only = answer_only
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
        click.secho(text, err=True, fg=fg, dim=dim, color=self.color)

    def _end_line(self) -> None:
        if self.mid_line:
            click.echo()
            self.mid_line = False

    def show(self, event: Event) -> None:
        if isinstance(event, TextDeltaEvent):
            if self.answer_only:
                self.pending.append(event.text)
                return
            click.echo(event.text, nl=False)
            self.mid_line = not event.text.endswith("\n")
        elif isinstance(event, TurnStart) and event.turn > 1:
            self._end_line()
        elif isinstance(event, TurnEnd) and self.answer_only and not event.message.tool_calls:
            answer = "".join(self.pending)
            self.pending.clear()
            if answer:
                click.echo(answer, nl=not answer.endswith("\n"))
        elif isinstance(event, ToolCallProposed):
            self._flush_narration()
            self._err(f"→ {event.call.name} {_arguments(event.call.arguments)}", fg="cyan")
        elif isinstance(event, ToolCallBlocked):
            self.blocked.add(event.call.id)
            self._err(
                f"✗ {event.call.name} blocked by {event.blocked_by}: {event.reason}", fg="red"
            )
        elif isinstance(event, ToolCallResult) and not event.executed:
            if event.call.id not in self.blocked:  # an unknown tool, arguments not JSON
                self._err(f"← {event.call.name} not run: {one_line(event.content, 200)}", fg="red")
        elif isinstance(event, ToolCallResult) and event.executed:
            lines = event.content.count("\n") + 1 if event.content else 0
            status = "error" if event.is_error else "ok"
            first = one_line(event.content.splitlines()[0] if event.content else "", 80)
            self._err(
                f"← {event.call.name} {status} ({lines} lines) {first}",
                fg="red" if event.is_error else None,
            )
        elif isinstance(event, Diagnostic):
            self._err(f"{event.severity}: {event.message}", fg="yellow")
        elif isinstance(event, ErrorEvent):
            self.errors.add(event.message)
            self._err(f"error: {event.message}", fg="red")
        elif isinstance(event, RunEnd):
            self._end_line()
            if event.reason == "error" and event.message in self.errors:
                return  # the error line above said it: each error is printed once
            if event.reason != "completed":
                self._err(f"run ended: {event.reason}: {event.message}", fg="yellow")
