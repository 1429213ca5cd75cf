"""`assemble` on a pseudo-terminal, as a person at a terminal runs it (Linux and macOS).

stdin, stdout and stderr are all the terminal, so readline, the concurrent reading of
typed lines and the permission questions behave as they do for a person. Output is
collected by a thread; `expect` waits for a text to appear after the last match.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")


def _controlling_terminal() -> None:
    """In the child, in its new session: make the pty its controlling terminal, so
    Ctrl-C typed there is a SIGINT to it, as on a real terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


PROMPT_SETTLE = 0.3
"""Seconds between a prompt appearing and a Ctrl-C at it (`interrupt_at_prompt`)."""


class PtySession:
    def __init__(
        self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        master, slave = os.openpty()
        self.initial_modes = termios.tcgetattr(master)  # before the program touches them
        environment = {**os.environ, "TERM": "xterm", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "assembler", *args],
            stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=environment,
            # one ioctl in the child, no Python state touched: safe beside threads
            start_new_session=True, preexec_fn=_controlling_terminal,  # noqa: PLW1509
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.chunks: list[bytes] = []
        self.lock = threading.Lock()
        self.seen = 0  # `expect` looks after this offset of the output
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: the other end closed
                return
            if not data:
                return
            with self.lock:
                self.chunks.append(data)

    @property
    def raw(self) -> str:
        """Everything written so far, escape sequences included."""
        with self.lock:
            return b"".join(self.chunks).decode("utf-8", "replace")

    @property
    def output(self) -> str:
        """Everything written so far, colours and cursor moves removed."""
        return ANSI.sub("", self.raw).replace("\r\n", "\n")

    def expect(self, text: str, timeout: float = 60) -> str:
        """Wait until `text` appears after the previous match; return the output up to it."""
        deadline = time.monotonic() + timeout  # a guard against hanging, not a timing check
        while time.monotonic() < deadline:
            output = self.output
            found = output.find(text, self.seen)
            if found >= 0:
                self.seen = found + len(text)
                return output[:found]
            if self.process.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"{text!r} never came; the output was:\n{self.output}")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\r").encode())

    def interrupt(self) -> None:
        """Ctrl-C, as the terminal sends it: SIGINT to the foreground process group."""
        os.write(self.master, b"\x03")

    def interrupt_at_prompt(self) -> None:
        """Ctrl-C at a prompt just drawn, as a person presses it (not within the same
        millisecond): CPython's readline draws the prompt before it starts waiting for
        a key, and a SIGINT that lands in between is acted on only at the next key
        (docs/decisions.md). The keys' meaning is what the tests check, not that race."""
        time.sleep(PROMPT_SETTLE)
        self.interrupt()

    def wait(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        with contextlib.suppress(OSError):
            os.close(self.master)
