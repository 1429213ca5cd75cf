"""`assemble rpc` as a live process: send requests, read replies as they come."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


class RpcClient:
    """Start `assemble rpc ARGS...`; `send` requests, `until`/`final` read replies."""

    def __init__(
        self, args: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `kill`)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "assembler", "rpc", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            cwd=cwd, env=None if env is None else dict(env),
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.replies: list[dict[str, Any]] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")

    def send(self, request: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()

    def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read replies until one satisfies `done`; return it (all are kept in `replies`)."""
        while True:
            line = self.lines.get(timeout=60)  # a guard against hanging, not a timing check
            assert line, f"the server exited early: {self.error_output()}"
            reply = json.loads(line)
            self.replies.append(reply)
            if done(reply):
                return reply

    def final(self, ident: Any) -> dict[str, Any]:
        """The one result or error line for request `ident`, waiting for it if need be."""
        for reply in self.replies:
            if reply.get("id") == ident and ("result" in reply or "error" in reply):
                return reply
        return self.until(lambda r: r.get("id") == ident and ("result" in r or "error" in r))

    def call(self, ident: Any, method: str, **params: Any) -> dict[str, Any]:
        """Send one request and wait for its answer."""
        self.send({"id": ident, "method": method, "params": params})
        return self.final(ident)

    def finish(self) -> list[dict[str, Any]]:
        """Close stdin, wait for the exit, return every reply."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        while line := self.lines.get(timeout=60):
            self.replies.append(json.loads(line))
        assert self.process.returncode == 0, self.error_output()
        return self.replies

    def kill(self) -> None:
        """Stop the server, letting it cancel a prompt first: a killed server would
        leave its commands' process groups running."""
        if self.process.poll() is None:
            try:
                self.send({"id": "cleanup", "method": "cancel"})
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=60)
        self.stderr.close()

    def error_output(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")
