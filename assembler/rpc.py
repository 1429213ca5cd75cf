"""JSON lines over stdio: an editor or another program drives an agent.

One request per line, `{"id": 1, "method": "prompt", "params": {"text": "..."}}`.
Every request gets exactly one final answer, `{"id": 1, "result": ...}` or
`{"id": 1, "error": {"type": ..., "message": ...}}`; while a prompt runs, each event
of the run arrives first as `{"id": 1, "event": {...}}` (the same events as
`assemble run --json`). A line that is not JSON, or not an object with a string
`method`, is answered with `id` null (or the request's `id`, when it has one).

Methods: `prompt` (`text`, a non-empty string; `max_turns`, a positive integer),
`cancel`, `system_prompt`, `tools`, `messages`, `reload`, `shutdown`. `params`, when
given, must be an object.

Input is read as it arrives, in its own thread, so a `cancel` is handled the moment
it is read, even while other requests wait: it stops the running prompt and every
prompt still waiting in line (each answered with an error of type `Cancelled`), and
answers `{"cancelled": true}` if there was any. Every other request is served in the
order it was read, one at a time: a request sent while a prompt runs is answered
after that prompt's final answer.

`shutdown` takes its turn like any other request: it waits for the running prompt
and the requests before it, answers `{"ok": true}`, and the server stops. To stop a
running prompt sooner, send `cancel` (before or after `shutdown`); until the server
stops, any other request read after `shutdown` is answered with an error of type
`ShuttingDown` (input left unread then is ignored). The end of input acts like a
`shutdown` without an answer: the requests before it are still served. A request that fails is answered
with its error: the class name of an `AssemblerError`, `InvalidParams`,
`MethodNotFound`, or `InternalError` for anything unexpected (its traceback goes to
stderr). A line longer than `MAX_LINE_BYTES` (16 MiB) is discarded and answered with
`id` null and an error of type `LineTooLong`. The agent is the one `build_agent` made, exactly as for the CLI and the SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from assembler.agent.agent import Agent
from assembler.errors import AssemblerError
from assembler.sessions.codec import message_to_dict
from assembler.text import json_type_name, one_line

Write = Callable[[dict[str, Any]], None]
Line = str | bytes

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest request line accepted, in bytes, not counting the newline. A prompt
that long is millions of tokens, beyond any model's context; a longer line is
answered with a `LineTooLong` error and discarded, and the server goes on."""


@dataclass(frozen=True)
class OverlongLine:
    """Delivered instead of a line longer than `MAX_LINE_BYTES`: its bytes were
    dropped as they arrived, so it costs no memory, and it is answered with an error."""


Input = Line | OverlongLine | None
"""What the reader delivers: a line, a line that was too long, or None at the end."""


class RpcError(Exception):
    """A request the server refuses; `kind` is the error's `type` in the answer."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(eq=False)
class Request:
    ident: Any
    method: str
    params: Any = None
    cancelled: bool = field(default=False)

    def params_object(self) -> dict[str, Any]:
        if self.params is None:
            return {}
        if not isinstance(self.params, dict):
            raise RpcError(
                "InvalidParams", f"`params` must be an object, not {json_type_name(self.params)}"
            )
        return self.params


class RpcServer:
    """Serves one agent: `receive` each line as it is read (None at the end of
    input), while `run` works through the requests until `shutdown` or the end."""

    def __init__(self, agent: Agent, write: Write) -> None:
        self.agent = agent
        self.write = write
        self.queue: asyncio.Queue[Request | None] = asyncio.Queue()
        self.waiting: list[Request] = []  # prompts read but not started
        self.running: asyncio.Task[dict[str, Any]] | None = None
        self.shutting_down = False  # a `shutdown` was read
        self.stopped = False  # the worker is done
        self.closed = False  # the output is gone

    # -- reading -----------------------------------------------------------------

    def receive(self, line: Input) -> None:
        """Take one line of input as soon as it is read: answer `cancel` at once,
        queue anything else for `run`."""
        if self.stopped or self.closed:
            return
        if line is None:
            self.queue.put_nowait(None)
            return
        if isinstance(line, OverlongLine):
            limit = f"{MAX_LINE_BYTES // (1024 * 1024)} MiB ({MAX_LINE_BYTES} bytes)"
            self._error(
                None,
                "LineTooLong",
                f"a request line may hold at most {limit}; a longer one was discarded",
            )
            return
        if not line.strip():
            return
        request = self._parse(line)
        if request is None:
            return
        if request.method == "cancel":
            self._cancel(request)
        elif self.shutting_down:
            self._error(request.ident, "ShuttingDown", "the server is shutting down")
        else:
            if request.method == "shutdown":
                self.shutting_down = True
            elif request.method == "prompt":
                self.waiting.append(request)
            self.queue.put_nowait(request)

    def _parse(self, line: Line) -> Request | None:
        try:
            data = json.loads(line)
        except Exception as e:  # ValueError, UnicodeDecodeError, RecursionError
            self._error(None, "ParseError", one_line(str(e), limit=None) or type(e).__name__)
            return None
        if not isinstance(data, dict) or not isinstance(data.get("method"), str):
            ident = data.get("id") if isinstance(data, dict) else None
            self._error(
                ident,
                "InvalidRequest",
                "expected an object {id, method, params} with a string method",
            )
            return None
        return Request(data.get("id"), data["method"], data.get("params"))

    def _cancel(self, request: Request) -> None:
        try:
            request.params_object()
        except RpcError as e:
            self._fail(request.ident, e)
            return
        cancelled = self._cancel_prompts()
        self.send({"id": request.ident, "result": {"cancelled": cancelled}})

    def _cancel_prompts(self) -> bool:
        """Stop the running prompt and mark the waiting ones; whether there was any."""
        cancelled = bool(self.waiting)
        for waiting in self.waiting:
            waiting.cancelled = True
        self.waiting.clear()
        if self.running is not None and not self.running.done():
            self.running.cancel()
            cancelled = True
        return cancelled

    # -- serving -----------------------------------------------------------------

    async def run(self) -> None:
        """Serve queued requests in order until `shutdown`, the end of input, or
        the output closing."""
        try:
            while not self.closed:
                request = await self.queue.get()
                if request is None:
                    break
                await self.serve(request)
                if request.method == "shutdown":
                    break
        finally:
            self.stopped = True

    async def serve(self, request: Request) -> None:
        """Answer one request (never `cancel`); any error becomes the answer."""
        try:
            if request.method == "prompt":
                await self._prompt(request)
                return
            handler = self._methods().get(request.method)
            if handler is None:
                known = ", ".join(["prompt", "cancel", *self._methods()])
                raise RpcError(
                    "MethodNotFound", f"unknown method {request.method!r}; methods: {known}"
                )
            result = await handler(request.params_object())
            self.send({"id": request.ident, "result": result})
        except Exception as e:
            self._fail(request.ident, e)

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]:
        return {
            "system_prompt": self._system_prompt,
            "tools": self._tools,
            "messages": self._messages,
            "reload": self._reload,
            "shutdown": self._shutdown,
        }

    async def _prompt(self, request: Request) -> None:
        if request in self.waiting:
            self.waiting.remove(request)
        if request.cancelled:
            self._cancelled(request.ident)
            return
        params = request.params_object()
        text = params.get("text")
        if not isinstance(text, str) or not text:
            raise RpcError("InvalidParams", "`text` must be a non-empty string")
        max_turns = params.get("max_turns")
        if max_turns is not None and (
            not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1
        ):
            raise RpcError("InvalidParams", "`max_turns` must be a positive integer")
        task = asyncio.create_task(self._stream(request.ident, text, max_turns))
        self.running = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # the server itself is stopping
            task.cancel()
            await asyncio.wait({task})
            self._cancelled(request.ident)
            raise
        finally:
            self.running = None
        if task.cancelled():
            self._cancelled(request.ident)
        elif (error := task.exception()) is not None:
            self._fail(request.ident, error)
        else:
            self.send({"id": request.ident, "result": task.result()})

    async def _stream(self, ident: Any, text: str, max_turns: int | None) -> dict[str, Any]:
        final: dict[str, Any] = {}
        events = self.agent.stream(text, max_turns=max_turns)
        try:
            async for event in events:
                data = event.to_dict()
                self.send({"id": ident, "event": data})
                if data["type"] == "run_end":
                    final = data
        finally:  # an async generator left open would finish at some random later time
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
        return final

    async def _system_prompt(self, params: dict[str, Any]) -> Any:
        return {"text": self.agent.system_prompt()}

    async def _tools(self, params: dict[str, Any]) -> Any:
        return [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in self.agent.registry.schemas()
        ]

    async def _messages(self, params: dict[str, Any]) -> Any:
        return [message_to_dict(m) for m in self.agent.messages]

    async def _reload(self, params: dict[str, Any]) -> Any:
        snapshot = self.agent.reload()
        return {
            "skills": [s.name for s in snapshot.skills],
            "context_files": [f.path for f in snapshot.context_files],
            "tools": list(self.agent.registry.names()),
            "diagnostics": [d.format() for d in snapshot.diagnostics],
        }

    async def _shutdown(self, params: dict[str, Any]) -> Any:
        return {"ok": True}

    async def stop(self) -> None:
        """Cancel whatever still runs (the server itself was cancelled)."""
        self.stopped = True
        task = self.running
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})

    # -- writing -----------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.write(message)
        except OSError:
            # The reader of our output is gone: nobody is left to answer.
            self.closed = True
            self._cancel_prompts()
            self.queue.put_nowait(None)

    def _error(self, ident: Any, kind: str, message: str) -> None:
        self.send({"id": ident, "error": {"type": kind, "message": message}})

    def _cancelled(self, ident: Any) -> None:
        self._error(ident, "Cancelled", "the prompt was cancelled")

    def _fail(self, ident: Any, error: BaseException) -> None:
        if isinstance(error, RpcError):
            self._error(ident, error.kind, str(error))
        elif isinstance(error, AssemblerError):
            self._error(ident, type(error).__name__, str(error))
        else:
            traceback.print_exception(error, file=sys.stderr)
            detail = one_line(str(error), limit=None)
            name = type(error).__name__
            self._error(ident, "InternalError", f"{name}: {detail}" if detail else name)


def _read_lines(
    source: TextIO, loop: asyncio.AbstractEventLoop, deliver: Callable[[Input], None]
) -> None:
    """Read `source` in a daemon thread, handing each line to `deliver` on `loop`
    and None at the end. The thread reads the file descriptor itself (no buffered
    reader's lock held while it waits), so exiting while it blocks is safe.

    Time and memory are linear in the input: each chunk is searched for newlines
    once and each byte copied once. A line over `MAX_LINE_BYTES` becomes one
    `OverlongLine` as soon as it crosses the limit, and the rest of it is skipped."""

    def post(line: Input) -> bool:
        try:
            loop.call_soon_threadsafe(deliver, line)
        except RuntimeError:  # the loop is closed: the server is gone
            return False
        return True

    def from_fd(fd: int) -> None:
        parts: list[bytes] = []  # the line so far, joined once when it ends
        size = 0
        skipping = False  # inside a line that was too long
        while True:
            try:
                chunk = os.read(fd, 65536)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                break
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if not skipping and size + len(piece) > MAX_LINE_BYTES:
                    skipping = True
                    parts, size = [], 0
                    if not post(OverlongLine()):
                        return
                elif not skipping and piece:
                    parts.append(piece)
                    size += len(piece)
                if end < 0:
                    break
                if not skipping and not post(b"".join(parts)):
                    return
                parts, size, skipping = [], 0, False
                start = end + 1
        if parts:
            post(b"".join(parts))
        post(None)

    def from_text() -> None:
        skipping = False
        while text := source.readline(MAX_LINE_BYTES + 1):
            complete = text.endswith("\n")
            if skipping:  # the rest of a line already refused
                skipping = not complete
                continue
            line: Input = text
            if len(text.rstrip("\n").encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
                skipping = not complete
                line = OverlongLine()
            if not post(line):
                return
        post(None)

    try:
        fd: int | None = source.fileno()
    except (AttributeError, OSError, ValueError):  # io.StringIO and friends
        fd = None
    target: Callable[[], None] = from_text if fd is None else (lambda: from_fd(fd))
    threading.Thread(target=target, name="assemble-rpc-input", daemon=True).start()


async def serve(agent: Agent, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    """Read requests from `stdin` until `shutdown` or end of input; close the agent."""
    source = stdin or sys.stdin
    sink = stdout or sys.stdout

    def write(message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, default=str) + "\n"
        try:
            try:
                sink.write(line)
            except UnicodeEncodeError:  # a lone surrogate, or a narrow output encoding
                sink.write(json.dumps(message, default=str) + "\n")
            sink.flush()
        except ValueError as e:  # the output file is closed
            raise OSError(str(e)) from e

    server = RpcServer(agent, write)
    try:
        await agent.start()
        server.send({"id": None, "event": {"type": "ready", "agent": agent.name}})
        _read_lines(source, asyncio.get_running_loop(), server.receive)
        await server.run()
    finally:
        try:
            await server.stop()
        finally:
            await agent.aclose()
