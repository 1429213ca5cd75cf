"""Lines typed into an interactive session, read in the main thread while the
session's event loop runs in a thread of its own (a line typed while the agent works
is a steer, not a wait).

The reader reads one line per `request()` and hands it to the loop, so the session
decides when the next read starts: on a terminal as soon as a line arrived (the
person may type at any time); from a pipe or a file only when the session is idle,
since a script cannot time its lines and means each one as a message of its own.

On a terminal (stdin and stdout both), lines are read with `input()`, which uses
readline when it is available: line editing, and a history kept in the user's data
folder (`<data dir>/history`, private to the user) across sessions, and Tab
completes `/commands` and `@path` mentions (`completion`).

Why the main thread: Python runs signal handlers there only, and readline gives up
the line being edited (and puts the terminal back) only when a signal handler raises
inside it. So Ctrl-C can clear a half-typed line only if readline runs in the main
thread: the handler takes the text typed so far and raises, the read ends as an
`Interrupted` "line", and the session (on its loop) decides what the key meant:
cancel the work in progress, clear the line, or leave. A Ctrl-C outside a read goes
to the session directly. When the session ends first, `stop()` interrupts the read the
same way (with `_Closed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from assembler.user_dirs import default_data_dir

if TYPE_CHECKING:
    from assembler.cli.completion import Completer

HISTORY_LENGTH = 1000
#: Seconds `stop()` keeps waking a read that missed its signal, and between wake-ups.
STOP_WAIT = 5.0
STOP_RETRY = 0.05


def history_file() -> Path:
    return default_data_dir() / "history"


@dataclass(frozen=True)
class Interrupted:
    """Ctrl-C while a line was read on a terminal: readline dropped `typed`."""

    typed: str = ""


Line = str | Interrupted | None
"""What a read gives: the line, a Ctrl-C that ended it, or None at the end of input."""


class _Closed(Exception):
    """Raised by the SIGINT handler in the main thread when the session is over."""


class LineReader:
    """Reads stdin line by line in the main thread (`serve()`); the session's loop
    asks for lines with `request()` and takes them with `get()`."""

    def __init__(self, *, terminal: bool, prompt_stream: TextIO | None = None) -> None:
        self.terminal = terminal
        self.prompt_stream = prompt_stream  # None: the prompt goes where input() puts it
        self.pending = False  # a read was requested and its line has not come yet
        self.pending_prompt = ""
        self._lines: asyncio.Queue[Line] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_interrupt: Callable[[], None] | None = None
        self._requests: queue.Queue[str | None] = queue.Queue()
        self._ended = False
        self._history: Path | None = None
        self._terminal_state: list[Any] | None = None
        self._editing = False  # the main thread is inside readline's `input()`
        self._reading = False  # the main thread waits for a line (any kind of read)
        self._typed = ""  # what that read held when Ctrl-C ended it
        self._closing = False
        self._serving = False
        self._guard = threading.Lock()
        self._main = threading.main_thread().ident

    @property
    def ended(self) -> bool:
        """The end of input was read: no line will come any more."""
        return self._ended

    def typing(self) -> bool:
        """Whether a line is being typed on the terminal now (something not sent yet)."""
        return self._editing and bool(_line_buffer())

    def bind(self, on_interrupt: Callable[[], None]) -> None:
        """On the session's loop, before the first `request()`: lines go to this loop,
        and a Ctrl-C outside a read calls `on_interrupt` there."""
        self._loop = asyncio.get_running_loop()
        self._lines = asyncio.Queue()
        self._on_interrupt = on_interrupt

    def request(self, prompt: str = "") -> None:
        """Start reading the next line (showing `prompt`), unless a read is under way."""
        if self.pending or self._ended:
            return
        self.pending = True
        self.pending_prompt = prompt
        self._requests.put(prompt)

    async def get(self) -> Line:
        assert self._lines is not None, "bind() first"
        line = await self._lines.get()
        self.pending = False
        if line is None:
            self._ended = True
        return line

    # -- the main thread -------------------------------------------------------------

    def serve(self) -> None:
        """Read lines as they are requested until the end of input or `stop()`; in
        the main thread, with `handle_sigint` as the SIGINT handler."""
        with contextlib.suppress(_Closed):  # `stop()`, wherever it found the read
            self._serve()

    def _serve(self) -> None:
        with self._guard:
            if self._closing:
                return
            self._serving = True
        try:
            while True:
                prompt = self._requests.get()
                if prompt is None:
                    return
                line = self._read(prompt)
                self._post(line)
                if line is None:
                    return
        finally:
            with self._guard:
                self._serving = False

    def stop(self) -> None:
        """From the session's thread, once it is over: end `serve()`, interrupting the
        read under way (readline then gives the terminal back as it found it).

        The signal is sent again until `serve()` has ended: readline draws its prompt
        before it waits for a key, and a signal landing in between is only acted on at
        the next key (which may never come), so one signal can be lost."""
        with self._guard:
            self._closing = True
            self._requests.put(None)
        kill = getattr(signal, "pthread_kill", None)  # POSIX only
        deadline = time.monotonic() + STOP_WAIT
        while kill is not None and self._main is not None and time.monotonic() < deadline:
            with self._guard:
                if not self._serving:
                    return
                if self._reading:
                    with contextlib.suppress(OSError, ValueError):
                        kill(self._main, signal.SIGINT)
            time.sleep(STOP_RETRY)

    def handle_sigint(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-C, in the main thread: inside a read on a terminal it ends the read
        (readline drops the line); elsewhere the session hears it; when the session
        is over (or not started), it is the KeyboardInterrupt it always was."""
        if self._closing:
            if self._reading:
                raise _Closed  # caught in `serve`
            return  # not in a read: `serve` ends by itself (its queue holds None)
        if self._editing:
            self._typed = _line_buffer()  # readline still holds it here, not after
            raise KeyboardInterrupt  # caught in `_read`: readline drops the line
        loop, handler = self._loop, self._on_interrupt
        if loop is None or handler is None or loop.is_closed():
            raise KeyboardInterrupt
        try:
            loop.call_soon_threadsafe(handler)
        except RuntimeError:  # the loop closed meanwhile
            raise KeyboardInterrupt from None

    def _read(self, prompt: str) -> Line:
        self._reading = True
        try:
            return self._read_now(prompt)
        finally:
            self._reading = False

    def _read_now(self, prompt: str) -> Line:
        editing = self.terminal and self.prompt_stream is None
        try:
            if not editing:
                return self._read_line(prompt)
            self._typed = ""
            self._editing = True
            try:
                return input(prompt)  # readline's editing, when stdin and stdout are terminals
            finally:
                self._editing = False
        except KeyboardInterrupt:
            return Interrupted(self._typed)
        except (EOFError, OSError, ValueError):
            return None

    def _post(self, line: Line) -> None:
        loop, lines = self._loop, self._lines
        if loop is None or lines is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: the session is over
            loop.call_soon_threadsafe(lines.put_nowait, line)

    def _read_line(self, prompt: str) -> str:
        if self.prompt_stream is None:
            return input(prompt)
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


def _line_buffer() -> str:
    """What readline holds of the line being edited ("" without readline)."""
    module = sys.modules.get("readline")  # loaded by `open` on a terminal only
    if module is None:
        return ""
    try:
        return str(module.get_line_buffer())
    except (AttributeError, ValueError):
        return ""


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
