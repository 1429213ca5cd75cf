"""Lines typed into an interactive session, read in a thread so the event loop keeps
running (a line typed while the agent works is a steer, not a wait).

The thread reads one line per `request()` and hands it to the loop, so the session
decides when the next read starts: on a terminal as soon as a line arrived (the
person may type at any time); from a pipe or a file only when the session is idle,
since a script cannot time its lines and means each one as a message of its own.

On a terminal (stdin and stdout both), lines are read with `input()`, which uses
readline when it is available: line editing, and a history kept in the user's data
folder (`<data dir>/history`, private to the user) across sessions, and Tab
completes `/commands` and `@path` mentions (`completion`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from assembler.user_dirs import default_data_dir

if TYPE_CHECKING:
    from assembler.cli.completion import Completer

HISTORY_LENGTH = 1000


def history_file() -> Path:
    return default_data_dir() / "history"


class LineReader:
    """Reads stdin line by line in a daemon thread; `get()` gives each line, None at
    the end of input."""

    def __init__(self, *, terminal: bool, prompt_stream: TextIO | None = None) -> None:
        self.terminal = terminal
        self.prompt_stream = prompt_stream  # None: the prompt goes where input() puts it
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.pending = False  # a read was requested and its line has not come yet
        self.pending_prompt = ""
        self._requests: queue.Queue[str] = queue.Queue()
        self._loop = asyncio.get_running_loop()
        self._ended = False
        self._history: Path | None = None
        self._terminal_state: list[Any] | None = None
        threading.Thread(target=self._read, name="assemble-input", daemon=True).start()

    @property
    def ended(self) -> bool:
        """The end of input was read: no line will come any more."""
        return self._ended

    def request(self, prompt: str = "") -> None:
        """Start reading the next line (showing `prompt`), unless a read is under way."""
        if self.pending or self._ended:
            return
        self.pending = True
        self.pending_prompt = prompt
        self._requests.put(prompt)

    async def get(self) -> str | None:
        line = await self.lines.get()
        self.pending = False
        if line is None:
            self._ended = True
        return line

    def _read(self) -> None:
        while True:
            prompt = self._requests.get()
            try:
                line: str | None = self._read_line(prompt)
            except (EOFError, OSError, ValueError):
                line = None
            except KeyboardInterrupt:  # only the main thread gets them; to be safe
                line = ""
            try:
                self._loop.call_soon_threadsafe(self.lines.put_nowait, line)
            except RuntimeError:  # the loop is closed: the session is over
                return
            if line is None:
                return

    def _read_line(self, prompt: str) -> str:
        if self.prompt_stream is None:
            return input(prompt)  # readline's editing, when stdin and stdout are terminals
        if prompt:
            self.prompt_stream.write(prompt)
            self.prompt_stream.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    # -- the terminal and the history ---------------------------------------------------

    def open(self, completer: Completer | None = None) -> None:
        """Remember the terminal's settings, and load line editing, the history and
        Tab completion with `completer` (on a terminal with readline only)."""
        if not self.terminal or self.prompt_stream is not None:
            return
        self._terminal_state = _terminal_settings()
        try:
            # Imported here: readline changes the terminal's behaviour as it loads, and
            # is only wanted for a person typing (never in a pipe or for -p).
            import readline
        except ImportError:  # not every Python has it (Windows)
            return
        if completer is not None:
            completer.line = readline.get_line_buffer
            readline.set_completer(completer.complete)
            readline.set_completer_delims(" \t\n")  # `@src/app.py` is one word
            if "libedit" in (readline.__doc__ or ""):  # macOS's readline
                readline.parse_and_bind("bind ^I rl_complete")
            else:
                readline.parse_and_bind("tab: complete")
        path = history_file()
        readline.set_history_length(HISTORY_LENGTH)
        with contextlib.suppress(OSError):
            readline.read_history_file(path)
        self._history = path

    def close(self) -> None:
        """Save the history, and give the terminal back as it was: the session may end
        while the reading thread is inside readline, which has switched echo and line
        mode off until a line is complete."""
        if self._history is not None:
            import readline  # already loaded by `open`

            path = self._history
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                readline.write_history_file(path)
                os.chmod(path, 0o600)  # what a person types can hold secrets
        if self._terminal_state is not None:
            _restore_terminal(self._terminal_state)


def _terminal_settings() -> list[Any] | None:
    try:
        import termios  # Imported here: POSIX only, and only for a terminal
    except ImportError:
        return None
    try:
        return termios.tcgetattr(sys.stdin.fileno())
    except (OSError, ValueError, termios.error):
        return None


def _restore_terminal(state: list[Any]) -> None:
    import termios  # loaded by `_terminal_settings`

    with contextlib.suppress(OSError, ValueError, termios.error):
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, state)
