"""The RPC server: one request per line in, one answer per request out (the protocol
is described in `assembler.rpc`)."""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from assembler.agent.agent import Agent
from assembler.errors import AssemblerError, ParameterError
from assembler.rpc.approvals import RpcApprovals
from assembler.rpc.errors import RpcError
from assembler.rpc.methods import AgentMethods
from assembler.rpc.reader import MAX_LINE_BYTES, Input, Line, OverlongLine, read_lines
from assembler.text import json_type_name, one_line

Write = Callable[[dict[str, Any]], None]

IMMEDIATE = frozenset({"steer", "follow_up", "state", "permission_reply"})
"""Methods answered the moment they are read, even while a prompt runs (with `cancel`)."""


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
        self.prompt_id: Any = None  # the id of the running prompt
        self.methods = AgentMethods(agent)
        self.approvals = RpcApprovals(self.send, lambda: self.prompt_id)

    # -- reading -----------------------------------------------------------------

    def receive(self, line: Input) -> None:
        """Take one line of input as soon as it is read: answer `cancel` and the
        `IMMEDIATE` methods at once, queue anything else for `run`."""
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
        elif request.method in IMMEDIATE:  # also after `shutdown`: a prompt may wait on it
            self._immediate(request)
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

    def _immediate(self, request: Request) -> None:
        try:
            params = request.params_object()
            if request.method == "permission_reply":
                result = self.approvals.reply(params)
            elif request.method == "state":
                result = self._state()
            elif request.method == "steer":
                result = self.methods.steer(params)
            else:
                result = self.methods.follow_up(params)
        except Exception as e:
            self._fail(request.ident, e)
            return
        self.send({"id": request.ident, "result": result})

    def _state(self) -> dict[str, Any]:
        return {
            **self.methods.state(),
            "prompts_waiting": len(self.waiting),
            "permission_requests": self.approvals.waiting(),
        }

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
                known = ", ".join(["prompt", "cancel", *self._methods(), *sorted(IMMEDIATE)])
                raise RpcError(
                    "MethodNotFound", f"unknown method {request.method!r}; methods: {known}"
                )
            result = await handler(request.params_object())
            self.send({"id": request.ident, "result": result})
        except Exception as e:
            self._fail(request.ident, e)

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]:
        methods = self.methods
        return {
            "system_prompt": methods.system_prompt,
            "tools": methods.tools,
            "messages": methods.messages,
            "reload": methods.reload,
            "compact": methods.compact,
            "fork": methods.fork,
            "sessions": methods.sessions,
            "switch_session": methods.switch_session,
            "new_session": methods.new_session,
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
        values = params.get("params")
        if values is not None and not isinstance(values, dict):
            raise RpcError("InvalidParams", "`params` must be an object of parameter values")
        runs_task = text is None and self.agent.io.task is not None  # rendered with `params`
        if not runs_task and (not isinstance(text, str) or not text):
            raise RpcError("InvalidParams", "`text` must be a non-empty string")
        if values is not None:  # every problem at once, before the run starts
            try:
                self.agent.io.bind(values)
            except ParameterError as e:
                raise RpcError("InvalidParams", str(e)) from e
        max_turns = params.get("max_turns")
        if max_turns is not None and (
            not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1
        ):
            raise RpcError("InvalidParams", "`max_turns` must be a positive integer")
        task = asyncio.create_task(self._stream(request.ident, text, max_turns))
        self.running = task
        self.prompt_id = request.ident
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # the server itself is stopping
            task.cancel()
            await asyncio.wait({task})
            self._cancelled(request.ident)
            raise
        finally:
            self.running = None
            self.prompt_id = None
        if task.cancelled():
            self._cancelled(request.ident)
        elif (error := task.exception()) is not None:
            self._fail(request.ident, error)
        else:
            self.send({"id": request.ident, "result": task.result()})

    async def _stream(self, ident: Any, text: str | None, max_turns: int | None) -> dict[str, Any]:
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
    agent.set_approver(server.approvals, timeout=agent.manifest.limits.permission_timeout)
    try:
        await agent.start()
        server.send({"id": None, "event": {"type": "ready", "agent": agent.name}})
        read_lines(source, asyncio.get_running_loop(), server.receive)
        await server.run()
    finally:
        try:
            await server.stop()
        finally:
            await agent.aclose()
