"""Progress while an evaluation runs: a bar on a terminal, one line per run otherwise.

On a terminal the bar is redrawn in place as runs finish, with the counts of passes,
failures and errors; a run that did not pass is printed above it as it happens, so
failures can be read while the rest runs. When stdout is not a terminal (CI logs, a
pipe) every finished run is one plain line, and nothing is redrawn. What runs and
models wrote is shown escaped, never obeyed (`terminal_safe`).
"""

from __future__ import annotations

import time
from typing import TextIO

from assembler.eval.records import RunRecord
from assembler.text import terminal_safe

_BAR = 24
_LABELS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}


class Progress:
    def __init__(self, stream: TextIO, *, tty: bool | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.total = 0
        self.done = 0
        self.counts = {"passed": 0, "failed": 0, "error": 0}
        self.started = time.monotonic()
        self._drawn = False

    def begin(self, total: int, note: str = "") -> None:
        self.total = total
        self.started = time.monotonic()
        if note:
            self._line(note)
        self._draw()

    def update(self, record: RunRecord) -> None:
        self.done += 1
        self.counts[record.status] += 1
        if self.tty:
            if record.status != "passed":
                mark = "✗" if record.status == "failed" else "!"
                self._line(f"{mark} {_LABELS[record.status]} {_describe(record)}")
            self._draw()
        else:
            self._line(f"{_LABELS[record.status]:<5} {_describe(record)}")

    def end(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

    def note(self, text: str) -> None:
        self._line(text)

    def _line(self, text: str) -> None:
        if self.tty and self._drawn:
            self.stream.write("\r\x1b[2K")
            self._drawn = False
        self.stream.write(terminal_safe(text) + "\n")
        self.stream.flush()

    def _draw(self) -> None:
        if not self.tty or not self.total:
            return
        filled = round(_BAR * self.done / self.total)
        bar = "█" * filled + "░" * (_BAR - filled)
        passed, failed, errors = (self.counts[k] for k in ("passed", "failed", "error"))
        elapsed = time.monotonic() - self.started
        self.stream.write(
            f"\r\x1b[2K[{bar}] {self.done}/{self.total}  ✓ {passed}  ✗ {failed}  ! {errors}"
            f"  {elapsed:.1f} s"
        )
        self.stream.flush()
        self._drawn = True


def _describe(record: RunRecord) -> str:
    figures = f"{record.duration_s:.1f} s, {record.turns} turns, {record.tokens:,} tokens"
    text = f"{record.task}#{record.repeat} ({figures})"
    if record.status != "passed":
        reason = " ".join(record.first_failure().split())
        text += ": " + (reason if len(reason) <= 200 else reason[:199] + "…")
    elif record.replay and not any(check.kind == "replay" for check in record.checks):
        # a replay in `outcome` mode: it did not decide, but what it found is news
        note = " ".join(record.replay.split())
        text += "; replay: " + (note if len(note) <= 200 else note[:199] + "…")
    return text
