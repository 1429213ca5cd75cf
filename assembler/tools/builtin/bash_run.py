"""What a `bash` call does: run the command under its supervisor, collect its output,
and say how it ended (the tool itself, as the model sees it, is in `bash`).

Kept apart so that describing the tool (`render --dry-run`, the tool catalog) imports
nothing of running it: signals, the environment allowlist, output truncation and the
sandbox's refusal notes are loaded on the first call.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assembler.sandbox.denials import denial_note
from assembler.tools.arguments import optional_number, require_str
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.workspace import workspace_root
from assembler.tools.environment import tool_environment
from assembler.tools.truncate import split_lines, truncate_text

#: Seconds to wait for output after `bash` exits before stopping jobs that hold the pipe.
DRAIN_GRACE = 0.5


@dataclass
class _Output:
    """Combined stdout+stderr, keeping only a bounded tail so `yes` cannot eat memory."""

    cap: int
    data: bytearray
    dropped_lines: int = 0
    dropped: bool = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - self.cap
        if excess > 0:
            self.dropped_lines += self.data.count(b"\n", 0, excess)
            del self.data[:excess]
            self.dropped = True

    def text(self) -> tuple[str, int]:
        """The kept text and how many lines before it were dropped entirely."""
        data, dropped = bytes(self.data), self.dropped_lines
        newline = data.find(b"\n")
        if self.dropped and newline != -1 and newline + 1 < len(data):
            # The first kept line lost its start: drop it too, and count it as cut.
            data = data[newline + 1 :]
            dropped += 1
        return data.decode("utf-8", "replace"), dropped


@dataclass
class _Outcome:
    exit_code: int | None
    timed_out: bool
    stopped_background: bool
    output: _Output


async def run_bash(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    command = require_str(args, "command", allow_empty=False)
    requested = optional_number(args, "timeout")
    timeout = ctx.timeout if requested is None else min(requested, ctx.timeout)
    cwd = workspace_root(ctx.workspace)
    env = dict(ctx.env) if ctx.env is not None else tool_environment(os.environ)
    policy = ctx.sandbox.policy() if ctx.sandbox is not None else None
    if policy is not None:
        env.update(policy.env)

    started = time.monotonic()
    outcome = await _run(
        command,
        cwd=str(cwd),
        env=env,
        timeout=timeout,
        ctx=ctx,
        policy=policy.to_dict() if policy is not None else None,
    )
    elapsed = time.monotonic() - started

    text, dropped = outcome.output.text()
    lines = split_lines(text)
    cut = truncate_text(text, ctx.max_output_lines, ctx.max_output_bytes, keep="tail")
    body = cut.text.rstrip("\n") if (text or dropped) else "(no output)"
    notes: list[str] = []
    if cut.truncated:
        notes.append(cut.notice(line_offset=dropped, total_lines=dropped + len(lines)) or "")
    elif dropped:
        total = dropped + len(lines)
        notes.append(
            f"[output truncated: showing lines {dropped + 1}-{total} of {total}; "
            f"{dropped} lines cut]"
        )
    if outcome.stopped_background:
        notes.append(
            "[the command exited but background processes kept its output open; they "
            "were stopped (redirect their output, `cmd > file 2>&1 &`, to keep them running)]"
        )
    if outcome.timed_out:
        notes.append(f"[command timed out after {timeout:g} s and was killed]")
    elif outcome.exit_code is not None and outcome.exit_code < 0:
        notes.append(f"[killed by signal {_signal_name(-outcome.exit_code)}]")
    elif outcome.exit_code:
        notes.append(f"[exit code {outcome.exit_code}]")
    details: dict[str, Any] = {
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "timeout": timeout,
        "elapsed": round(elapsed, 3),
        "truncated": cut.truncated or dropped > 0,
    }
    if ctx.sandbox is not None:
        shown = ctx.sandbox.describe()
        ran: dict[str, Any] = {"filesystem": shown["filesystem"], "network": shown["network"]}
        refused = ctx.sandbox.denied_since(started)
        note = denial_note(shown, text, outcome.exit_code, refused)
        if note:
            notes.append(note)
            ran["refused"] = refused or True
        details["sandbox"] = ran
    is_error = outcome.timed_out or outcome.exit_code != 0
    return ToolResult("\n".join([body, *notes]), is_error=is_error, details=details)


async def _run(
    command: str,
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    ctx: ToolContext,
    policy: dict[str, Any] | None = None,
) -> _Outcome:
    """Run the command; return when it exits or times out, with nothing left running
    that holds its output (and nothing at all after a timeout or a cancellation).

    The output goes through a pipe this function owns; the command's status comes
    from its supervisor, so waiting for it never waits for background jobs.
    """
    # Imported here: asyncio and subprocess are not needed to list or validate tools.
    import asyncio

    from assembler.tools.processes import KILL_GRACE, STOP_WAIT, start_supervised

    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        # `bash` is found on the assembler's PATH: the command's own PATH (which the
        # manifest may set) decides what the command runs, not which shell runs it.
        shell = shutil.which("bash") or "bash"
        supervised = await start_supervised(
            [shell, "-c", command],
            cwd=cwd,
            env=env,
            output_fd=write_fd,
            policy=policy,
            scope=ctx.processes,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    stream = asyncio.StreamReader()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), pipe
        )
    except BaseException:  # cancelled already: the command must not run on
        supervised.kill()
        supervised.release()
        pipe.close()
        raise
    output = _Output(cap=max(4 * ctx.max_output_bytes, 1 << 20), data=bytearray())

    async def pump() -> None:
        while chunk := await stream.read(65536):
            output.add(chunk)

    reader = asyncio.ensure_future(pump())
    exited = asyncio.ensure_future(supervised.wait_outcome())
    deadline = loop.time() + timeout
    timed_out = stopped_background = False
    finished = False
    try:
        done, _ = await asyncio.wait({exited}, timeout=timeout)
        timed_out = exited not in done
        if not timed_out:
            exited.result()  # a supervisor that could not start the command raises here
            grace = max(0.0, min(DRAIN_GRACE, deadline - loop.time()))
            drained, _ = await asyncio.wait({reader}, timeout=grace)
            stopped_background = reader not in drained
        finished = not (timed_out or stopped_background)
    finally:
        # Also reached on cancellation: the command must not outlive the call. The
        # request to stop is one write; the supervisor does the rest even if this
        # coroutine is interrupted again.
        try:
            if not finished:
                supervised.kill()
                exited.cancel()
                await asyncio.wait({exited})  # one reader of the status at a time
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(supervised.wait_done(), STOP_WAIT)
            await asyncio.wait({reader}, timeout=KILL_GRACE)
        finally:
            reader.cancel()
            exited.cancel()
            transport.close()
            supervised.release()
    exit_code = None if timed_out else supervised.exit_code()
    return _Outcome(exit_code, timed_out, stopped_background, output)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
