"""The interactive session of `assemble run` (no `-p`): one event loop for the whole
session, so servers, the session file and the conversation live across turns.

The session's event loop runs in a thread of its own while the main thread reads
lines (`line_input.LineReader`, and `run_session` below): on a terminal, a line typed during a turn is a steer (shown as queued, delivered after the
running tools), `/followup TEXT` waits for the end of the run, and the few commands
that only look (`/help`, `/tree`, `/session`) answer at once. A question the turn
asks (a permission `ask`, `/fork`'s pick) takes the next line. From a pipe or a file,
each line waits for the previous one to finish: a script means each line as a
message.

Ctrl-C cancels the turn or command in progress (its tool calls are answered as
cancelled, so the conversation stays valid) and never the session; at the prompt it
clears the line typed so far, and a second Ctrl-C in a row (the line empty) leaves, as
do `/exit` and the end of input (after the turn in progress). A line ending with a backslash goes on on the next line, for a
message of several lines where a paste is not at hand (a bracketed paste arrives as
one message already). `@path` attaches a workspace file to a message (`mentions`);
Tab completes commands and paths (`completion`). A session in which every turn failed
exits with status 1; each error is printed once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import click

from assembler.cli import slash
from assembler.cli.approval import ConsoleApprover
from assembler.cli.completion import Completer
from assembler.cli.line_input import Interrupted, Line, LineReader
from assembler.cli.mentions import attach
from assembler.cli.report import report_error
from assembler.cli.turns import drive, session_note
from assembler.errors import AssemblerError
from assembler.text import one_line

if TYPE_CHECKING:
    from assembler.agent.agent import Agent

PROMPT = "> "
MORE = "… "
"""The prompt of a line that goes on the one before (which ended with `\\`)."""


class Interactive:
    """One interactive session; `await run()` gives the exit status."""

    def __init__(
        self,
        agent: Agent,
        *,
        as_json: bool,
        max_turns: int | None,
        terminal: bool,
        approvals: bool,
        hide_reasoning: bool = False,
    ) -> None:
        self.agent = agent
        self.hide_reasoning = hide_reasoning
        self.as_json = as_json
        self.max_turns = max_turns
        self.terminal = terminal  # stdin is a terminal: read while the agent works
        self.approvals = approvals  # a person answers permission asks
        self.work: asyncio.Task[None] | None = None
        self.work_kind = ""  # "turn", or the command ("/compact")
        self.answer: asyncio.Future[str] | None = None
        self.leaving = False
        self.turns = 0
        self.failed = 0
        self.reader = LineReader(terminal=terminal, prompt_stream=sys.stderr if as_json else None)
        self.continued: list[str] = []  # lines so far of a message ended with `\`
        self.interrupted = False  # the last key was Ctrl-C at an empty prompt
        self.quit: asyncio.Future[None] | None = None
        self.main: asyncio.Task[Any] | None = None  # `run()`, on the session's loop
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def asking(self) -> bool:
        """A question waits for its answer: the next line is that answer."""
        return self.answer is not None and not self.answer.done()

    async def run(self) -> int:
        """The session on its loop (`run_session` runs it beside the reader)."""
        loop = asyncio.get_running_loop()
        self.main = asyncio.current_task()
        self.reader.bind(self._interrupt)
        self.quit = loop.create_future()
        if self.approvals:
            self.agent.set_approver(ConsoleApprover(self.ask))
        try:
            await self.agent.start()
            if not self.as_json:
                slash.note("Type a message; /help lists commands, Ctrl-C cancels a turn or "
                           "clears the line, /exit or Ctrl-D leaves.")  # fmt: skip
            try:
                await self._serve()
            finally:
                await self._stop_work()
        finally:
            await self.agent.aclose()
            session_note(self.agent, self.as_json)
        return 1 if self.turns and self.failed == self.turns else 0

    # -- the loop ------------------------------------------------------------------

    async def _serve(self) -> None:
        assert self.reader is not None
        reading: asyncio.Future[Line] | None = None
        ended = False
        self._want_line()
        while True:
            if reading is None and not ended:
                reading = asyncio.ensure_future(self.reader.get())
            waiting: set[asyncio.Future[Any]] = {f for f in (reading, self.work) if f is not None}
            if not waiting:
                return
            assert self.quit is not None
            done, _ = await asyncio.wait({*waiting, self.quit}, return_when=asyncio.FIRST_COMPLETED)
            if self.quit in done:
                break
            if self.work is not None and self.work in done:
                self._finished(self.work)
                self.work = None
                if self.leaving:
                    break
            if reading is not None and reading in done:
                line = reading.result()
                reading = None
                ended = line is None
                if not self._take(line):
                    break
            if self.quit.done():  # leaving: no new read for `stop()` to interrupt
                break
            self._want_line()
        if reading is not None:
            reading.cancel()

    def _take(self, line: Line) -> bool:
        """Act on one line (None: the end of input); False to leave now."""
        if isinstance(line, Interrupted):
            self._interrupt(line)
            return True
        if self.answer is not None and self.asking:
            self.answer.set_result(line or "")
            if line is not None:
                return True
        if line is None:
            click.echo(err=True)
            return self._leave("input ended")
        self.interrupted = False
        if line.endswith("\\") and not line.endswith("\\\\"):
            self.continued.append(line[:-1])  # the message goes on on the next line
            return True
        if self.continued:
            line = "\n".join([*self.continued, line])
            self.continued = []
        text = line.strip()
        if not text:
            return True
        command = slash.parse(text)
        if command is None:
            self._message(slash.message_text(text))
        elif command.name == "exit":
            return self._leave("/exit")
        elif command.name in slash.BUILTIN or command.name in self.agent.parts.commands:
            self._command(command)
        else:
            slash.unknown(command.name, self.agent.parts.commands)
        return True

    def _leave(self, why: str) -> bool:
        if self.work is None:
            return False
        self.leaving = True
        slash.note(f"({why}: leaving after this {self.work_kind}; Ctrl-C stops it now)")
        return True

    def _message(self, text: str) -> None:
        if self.work is None:
            self._start(self._turn(text), "turn")
        elif self.work_kind == "turn":
            self.agent.steer(text)
            slash.note(f"(queued steer: {one_line(text, 60)}; delivered after the running tools)")
        else:
            slash.error(f"{self.work_kind} is running: wait for it, or Ctrl-C to cancel it")

    def _command(self, command: slash.Slash) -> None:
        if self.work is not None and not slash.only_looks(command):
            slash.error(
                f"/{command.name} waits until the agent is idle: send it again after this "
                f"{self.work_kind} (Ctrl-C cancels it)"
            )
            return
        if not slash.quick(self.agent, command):
            self._start(slash.slow(self.agent, command, self.ask), f"/{command.name}")

    # -- work: a turn or a command ------------------------------------------------------

    def _start(self, work: Coroutine[Any, Any, None], kind: str) -> None:
        self.work = asyncio.ensure_future(work)
        self.work_kind = kind

    async def _turn(self, text: str) -> None:
        self.turns += 1
        attached = await attach(self.agent, text)
        for refused in attached.refused:
            slash.error(f"not attached: {refused}")
        if attached.files:
            slash.note(f"(attached {', '.join(attached.files)})")
        reason = await drive(
            self.agent,
            attached.text,
            self.as_json,
            self.max_turns,
            hide_reasoning=self.hide_reasoning,
            typing=self.reader.typing,
        )
        if reason != "completed":
            self.failed += 1

    def _finished(self, work: asyncio.Task[None]) -> None:
        if work.cancelled():
            what = "turn" if self.work_kind == "turn" else self.work_kind
            click.secho(f"\n({what} cancelled)", err=True, fg="yellow")
            return
        error = work.exception()
        if error is None:
            return
        if not isinstance(error, AssemblerError):
            raise error  # a bug of ours: `main` reports it
        report_error(error)  # this turn failed; the session goes on
        if self.work_kind == "turn":
            self.failed += 1

    async def _stop_work(self) -> None:
        work, self.work = self.work, None
        if work is not None and not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, AssemblerError):
                await work

    def _interrupt(self, read: Interrupted | None = None) -> None:
        """Ctrl-C: cancel the work in progress; when idle, clear the line (readline has
        dropped it: `read`), or forget a message being continued; a second Ctrl-C in a
        row at the prompt leaves. `read` is None when no line was being edited."""
        if self.work is not None and not self.work.done():
            self.work.cancel()
            return
        if self.continued:
            self.continued = []
            said = "(the lines before were dropped; "
        elif read is not None and read.typed:
            said = "(line cleared; "
        elif self.interrupted and self.quit is not None and not self.quit.done():
            click.echo(err=self.as_json)
            self.quit.set_result(None)  # the second Ctrl-C in a row at the prompt
            return
        else:
            said = "("
        self.interrupted = True
        # a read that Ctrl-C ended starts again with its prompt; one still going (no
        # line editing) keeps its place, so the prompt is shown again here
        again = "" if read is not None else (MORE if self.continued else PROMPT)
        click.echo(
            f"\n{said}Ctrl-C again, /exit or Ctrl-D to leave)\n{again}",
            err=self.as_json,
            nl=False,
        )

    def _command_names(self) -> list[str]:
        return [*slash.BUILTIN, *slash.ALIASES, *self.agent.parts.commands]

    # -- reading -------------------------------------------------------------------

    def _want_line(self) -> None:
        """Have a line read if one is wanted now: always when idle or asked something;
        while the agent works only from a terminal."""
        reader = self.reader
        assert reader is not None
        idle = self.work is None
        prompt = MORE if self.continued else PROMPT
        if reader.pending:
            if idle and reader.pending_prompt != prompt and not self.asking:
                click.echo(prompt, err=self.as_json, nl=False)  # the read began mid-turn
                reader.pending_prompt = prompt
            return
        if idle and not self.asking:
            reader.request(prompt)
        elif self.asking or (self.terminal and not self.leaving):
            reader.request("")

    async def ask(self, question: str) -> str:
        """Show `question` and return the next line typed (the approver and `/fork`);
        "" once the input has ended."""
        assert self.reader is not None
        click.echo(question, err=True, nl=False)
        if self.reader.ended:
            click.echo(err=True)
            return ""
        self.answer = asyncio.get_running_loop().create_future()
        self._want_line()
        try:
            return await self.answer
        finally:
            self.answer = None


def run_session(session: Interactive) -> int:
    """Run `session`: its event loop in a thread, the reading of lines in this one
    (the main thread: see `line_input`), which also takes Ctrl-C. The session's exit
    status; its failure (or SIGTERM's `SystemExit` here) is raised after it stopped."""
    reader = session.reader
    reader.open(Completer(session.agent.state().workspace, session._command_names))
    outcome: dict[str, Any] = {}
    started = threading.Event()
    # click keeps its context (`color=False` under NO_COLOR) per thread, Python its
    # context variables: the session's thread gets this thread's
    click_context = click.get_current_context(silent=True)
    variables = contextvars.copy_context()

    def loop_thread() -> None:
        try:
            with click_context.scope(cleanup=False) if click_context else contextlib.nullcontext():
                outcome["code"] = variables.run(asyncio.run, _started(session, started))
        except BaseException as e:  # re-raised in the main thread
            outcome["error"] = e
        finally:
            started.set()
            reader.stop()

    handled = _handle_sigint(reader)
    thread = threading.Thread(target=loop_thread, name="assemble-session", daemon=True)
    try:
        thread.start()
        started.wait()  # the loop is bound: lines and Ctrl-C have somewhere to go
        try:
            reader.serve()
            thread.join()  # after the end of input, the turn in progress goes on
        except BaseException:  # SIGTERM's SystemExit, a Ctrl-C while it closes
            loop = session.loop
            if loop is not None and session.main is not None and thread.is_alive():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(session.main.cancel)
                thread.join(timeout=5)
            raise
    finally:
        reader.close()
        if handled is not None:
            signal.signal(signal.SIGINT, handled)
    if "error" in outcome:
        raise outcome["error"]
    return int(outcome.get("code", 1))


async def _started(session: Interactive, started: threading.Event) -> int:
    session.loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(session.run())
    await asyncio.sleep(0)  # `run()` has bound the reader to this loop
    started.set()
    return await task


def _handle_sigint(reader: LineReader) -> Any:
    """Give SIGINT to `reader` (in the main thread only); the handler it replaced, or
    None when it could not."""
    try:
        return signal.signal(signal.SIGINT, reader.handle_sigint)
    except (ValueError, OSError):  # not the main thread: Ctrl-C stays a KeyboardInterrupt
        return None
