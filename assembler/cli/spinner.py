"""A waiting indicator on a terminal: for `assemble run -p`, and in the interactive
session while the model thinks (from each request until the first token of its reply).

A one-shot run prints nothing on stdout until the answer is complete, and a model can
take many seconds before its first token: without a sign of life, a person cannot tell
a slow model from a hung one. The spinner lives on stderr, only when stderr is a
terminal (never in a pipe, a log file or CI), draws only after a short quiet spell,
and erases itself before anything else is printed. After a second of silence it says
how long it has waited (`waiting for the model (12s)`): a slow model and a hung one
differ by whether that number keeps growing. It uses no escape sequences, so
`NO_COLOR` gets the same plain characters, and it is cut to the terminal's width (a
line that wrapped could not be erased with a carriage return).

In the interactive session the reply streams to the same terminal, so there the
spinner is `pause()`d by anything but the start of a request, and held while the
person types a line (`hold`): it never draws over text.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

FRAMES = "|/-\\"


def spinner_wanted(stream: TextIO | None = None) -> bool:
    """Only on an interactive terminal that can move the cursor back."""
    target = stream or sys.stderr
    try:
        interactive = target.isatty()
    except (AttributeError, ValueError):
        return False
    return interactive and os.environ.get("TERM") != "dumb"


class Spinner:
    """Call `touch()` whenever something happens; `run()` draws while nothing does."""

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = 0.3,
        interval: float = 0.1,
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.hold = hold  # True while it must not draw (a line being typed)
        self.last = time.monotonic()
        self.label = "waiting for the model"
        self.frame = 0
        self.drawn = 0  # characters on the line now
        self.paused = False

    def touch(self, label: str | None = None) -> None:
        """Something happened: erase the spinner, and wait `delay` before drawing again."""
        self.clear()
        self.paused = False
        self.last = time.monotonic()
        if label is not None:
            self.label = label

    def pause(self) -> None:
        """Erase it and draw no more until the next `touch()`."""
        self.clear()
        self.paused = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0

    def draw(self) -> None:
        waited = int(time.monotonic() - self.last)  # since anything last happened
        elapsed = f" ({waited}s)" if waited >= 1 else ""
        text = f"{FRAMES[self.frame % len(FRAMES)]} {self.label}{elapsed}"
        text = text[: max(1, shutil.get_terminal_size().columns - 1)]
        self.frame += 1
        self.stream.write("\r" + text.ljust(self.drawn))
        self.stream.flush()
        self.drawn = max(self.drawn, len(text))

    async def run(self) -> None:
        """Draw a frame every `interval` while nothing happened for `delay`; cancel to stop."""
        try:
            while True:
                await asyncio.sleep(self.interval)
                if self.paused or time.monotonic() - self.last < self.delay:
                    continue
                if self.hold is not None and self.hold():
                    self.clear()
                else:
                    self.draw()
        finally:
            self.clear()
