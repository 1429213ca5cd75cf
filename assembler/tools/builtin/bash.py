"""`bash`: run a shell command in the workspace, and never leave it running.

The command runs as `bash -c` in a new session (`start_new_session=True`), so it and
everything it starts share one process group that can be signalled as a whole. On a
timeout or a cancelled call the group gets SIGTERM, then SIGKILL after a short grace:
killing only `bash` would leave `sleep 100 &` and friends running, holding the output
pipe open and the tool call hanging. A background job that still holds the output pipe
after `bash` itself exits is stopped the same way (redirecting its output, as
`cmd > log 2>&1 &`, lets it keep running).

The environment is the parent's minus credentials (`scrub_environment`), unless the
manifest gives one explicitly in `ToolContext.env`.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assembler.errors import ToolError
from assembler.tools.arguments import guarded, optional_number, require_str
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.workspace import workspace_root
from assembler.tools.environment import scrub_environment
from assembler.tools.truncate import split_lines, truncate_text

if TYPE_CHECKING:
    from asyncio.subprocess import Process

#: Seconds between SIGTERM and SIGKILL for the command's process group.
KILL_GRACE = 1.0
#: Seconds to wait for output after `bash` exits before stopping jobs that hold the pipe.
DRAIN_GRACE = 0.5
_POLL = 0.05


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


@guarded("bash", ("command", "timeout"))
async def _bash(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    command = require_str(args, "command", allow_empty=False)
    requested = optional_number(args, "timeout")
    timeout = ctx.timeout if requested is None else min(requested, ctx.timeout)
    cwd = workspace_root(ctx.workspace)
    env = dict(ctx.env) if ctx.env is not None else scrub_environment(os.environ)

    started = time.monotonic()
    outcome = await _run(command, cwd=str(cwd), env=env, timeout=timeout, ctx=ctx)
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
    details = {
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "timeout": timeout,
        "elapsed": round(elapsed, 3),
        "truncated": cut.truncated or dropped > 0,
    }
    is_error = outcome.timed_out or outcome.exit_code != 0
    return ToolResult("\n".join([body, *notes]), is_error=is_error, details=details)


async def _run(
    command: str, *, cwd: str, env: dict[str, str], timeout: float, ctx: ToolContext
) -> _Outcome:
    """Run the command; return when it exits or times out, with nothing left running.

    The output goes through a pipe this function owns (not `PIPE`): asyncio's
    `Process.wait()` would otherwise also wait for every process holding the pipe.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    stream = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb", buffering=0)
    )
    output = _Output(cap=max(4 * ctx.max_output_bytes, 1 << 20), data=bytearray())

    async def pump() -> None:
        while chunk := await stream.read(65536):
            output.add(chunk)

    reader = asyncio.ensure_future(pump())
    exited = asyncio.ensure_future(proc.wait())
    deadline = loop.time() + timeout
    timed_out = stopped_background = False
    try:
        done, _ = await asyncio.wait({exited}, timeout=timeout)
        timed_out = exited not in done
        if not timed_out:
            grace = max(0.0, min(DRAIN_GRACE, deadline - loop.time()))
            drained, _ = await asyncio.wait({reader}, timeout=grace)
            stopped_background = reader not in drained
    finally:
        # Also reached on cancellation: the command must not outlive the call.
        try:
            if timed_out or stopped_background or proc.returncode is None:
                await _kill_group(proc)
            await asyncio.wait({reader}, timeout=KILL_GRACE)
        finally:
            reader.cancel()
            exited.cancel()
            transport.close()
    exit_code = None if timed_out else proc.returncode
    return _Outcome(exit_code, timed_out, stopped_background, output)


async def _kill_group(proc: Process) -> None:
    """SIGTERM the command's process group, then SIGKILL what is left after a grace."""
    import asyncio

    pgid = proc.pid  # the session leader's pid is the group id
    try:
        if _signal_group(pgid, signal.SIGTERM):
            loop = asyncio.get_running_loop()
            deadline = loop.time() + KILL_GRACE
            while loop.time() < deadline and _group_alive(pgid):
                await asyncio.sleep(_POLL)
    finally:  # a second cancellation must not skip the SIGKILL
        _signal_group(pgid, signal.SIGKILL)
    await proc.wait()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError as exc:  # a member changed its credentials (setuid)
        raise ToolError(f"cannot stop the command's processes: {exc}") from exc
    return True


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count).

    Killed background jobs are orphans, reaped by init whenever it gets to it; until
    then `killpg(pgid, 0)` still succeeds, so on Linux `/proc` is asked instead.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True  # no /proc (macOS): assume alive until the grace ends
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


BASH_TOOL = Tool(
    name="bash",
    description=(
        "Run a shell command with `bash -c` in the workspace directory and return its "
        "combined stdout and stderr (the end is kept when long). A non-zero exit code is "
        "reported as an error. Commands are killed, with everything they started, when they "
        "exceed the timeout; background jobs that keep writing to the output are stopped "
        "when the command exits."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": (
                    "Seconds before the command is killed; capped by the agent's tool "
                    "timeout (default 120)."
                ),
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    execute=_bash,
    snippet="Run a shell command in the workspace (output, exit code; killed on timeout)",
    guidelines=(
        "Use `bash` for builds, tests, git and file operations the other tools do not cover.",
        "Commands do not read stdin; avoid interactive programs and long-running servers.",
    ),
)
