"""A waiting indicator for `assemble run -p` on a terminal.

A one-shot run prints nothing on stdout until the answer is complete, and a model can
take many seconds before its first token: without a sign of life, a person cannot tell
a slow model from a hung one. The spinner lives on stderr, only when stderr is a
terminal (never in a pipe, a log file or CI), draws only after a short quiet spell,
and erases itself before anything else is printed. After a second of silence it says
how long it has waited (`waiting for the model (12s)`): a slow model and a hung one
differ by whether that number keeps growing. It uses no escape sequences, so
`NO_COLOR` and dumb terminals get the same plain characters.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
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

    def __init__(self, stream: TextIO, *, delay: float = 0.3, interval: float = 0.1) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.last = time.monotonic()
        self.label = "waiting for the model"
        self.frame = 0
        self.drawn = 0  # characters on the line now

    def touch(self, label: str | None = None) -> None:
        """Something happened: erase the spinner, and wait `delay` before drawing again."""
        self.clear()
        self.last = time.monotonic()
        if label is not None:
            self.label = label

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0

    def draw(self) -> None:
        waited = int(time.monotonic() - self.last)  # since anything last happened
        elapsed = f" ({waited}s)" if waited >= 1 else ""
        text = f"{FRAMES[self.frame % len(FRAMES)]} {self.label}{elapsed}"
        self.frame += 1
        self.stream.write("\r" + text.ljust(self.drawn))
        self.stream.flush()
        self.drawn = max(self.drawn, len(text))

    async def run(self) -> None:
        """Draw a frame every `interval` while nothing happened for `delay`; cancel to stop."""
        try:
            while True:
                await asyncio.sleep(self.interval)
                if time.monotonic() - self.last >= self.delay:
                    self.draw()
        finally:
            self.clear()
