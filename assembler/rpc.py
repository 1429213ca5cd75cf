"""JSON lines over stdio: an editor or another program drives an agent.

One request per line, `{"id": 1, "method": "prompt", "params": {"text": "..."}}`.
The answer to a request is `{"id": 1, "result": ...}` or `{"id": 1, "error":
{"type": ..., "message": ...}}`; while a prompt runs, each event of the run arrives
first as `{"id": 1, "event": {...}}` (the same events as `assemble run --json`).

Methods: `prompt` (text, max_turns), `cancel` (stops the running prompt),
`system_prompt`, `tools`, `messages`, `reload`, `shutdown`. Requests other than
`cancel` wait for a running prompt to finish. The agent is the one `build_agent`
made, exactly as for the CLI and the SDK.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from assembler.agent import Agent
from assembler.errors import AssemblerError
from assembler.sessions.codec import message_to_dict

Write = Callable[[dict[str, Any]], None]


class RpcServer:
    """Serves one agent until `shutdown` or the end of input."""

    def __init__(self, agent: Agent, write: Write) -> None:
        self.agent = agent
        self.write = write
        self.running: asyncio.Task[None] | None = None
        self.stopped = False

    async def handle(self, line: str) -> None:
        try:
            request = json.loads(line)
        except ValueError as e:
            self.write({"id": None, "error": {"type": "ParseError", "message": str(e)}})
            return
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            self.write(
                {
                    "id": None,
                    "error": {"type": "InvalidRequest", "message": "expected {id, method, params}"},
                }
            )
            return
        ident = request.get("id")
        method = request["method"]
        params = request.get("params") or {}
        if method == "cancel":
            cancelled = self.running is not None and not self.running.done()
            if cancelled and self.running is not None:
                self.running.cancel()
            self.write({"id": ident, "result": {"cancelled": cancelled}})
            return
        if self.running is not None:
            await asyncio.gather(self.running, return_exceptions=True)
        if method == "prompt":
            self.running = asyncio.create_task(self._prompt(ident, params))
            return
        handler = self._methods().get(method)
        if handler is None:
            known = ", ".join(["prompt", "cancel", *self._methods()])
            self.write(
                {
                    "id": ident,
                    "error": {
                        "type": "MethodNotFound",
                        "message": f"unknown method {method!r}; methods: {known}",
                    },
                }
            )
            return
        try:
            self.write({"id": ident, "result": await handler(params)})
        except AssemblerError as e:
            self.write({"id": ident, "error": {"type": type(e).__name__, "message": str(e)}})

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]:
        return {
            "system_prompt": self._system_prompt,
            "tools": self._tools,
            "messages": self._messages,
            "reload": self._reload,
            "shutdown": self._shutdown,
        }

    async def _prompt(self, ident: Any, params: dict[str, Any]) -> None:
        text = params.get("text")
        if not isinstance(text, str) or not text:
            self.write(
                {
                    "id": ident,
                    "error": {
                        "type": "InvalidParams",
                        "message": "`text` must be a non-empty string",
                    },
                }
            )
            return
        final: dict[str, Any] = {}
        try:
            async for event in self.agent.stream(text, max_turns=params.get("max_turns")):
                data = event.to_dict()
                self.write({"id": ident, "event": data})
                if data["type"] == "run_end":
                    final = data
            self.write({"id": ident, "result": final})
        except asyncio.CancelledError:
            self.write(
                {"id": ident, "error": {"type": "Cancelled", "message": "the prompt was cancelled"}}
            )
        except AssemblerError as e:
            self.write({"id": ident, "error": {"type": type(e).__name__, "message": str(e)}})

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
        self.stopped = True
        return {"ok": True}


async def serve(agent: Agent, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    """Read requests from `stdin` until `shutdown` or end of input; close the agent."""
    source = stdin or sys.stdin
    sink = stdout or sys.stdout

    def write(message: dict[str, Any]) -> None:
        sink.write(json.dumps(message, ensure_ascii=False, default=str) + "\n")
        sink.flush()

    server = RpcServer(agent, write)
    loop = asyncio.get_running_loop()
    try:
        await agent.start()
        write({"id": None, "event": {"type": "ready", "agent": agent.name}})
        while not server.stopped:
            line = await loop.run_in_executor(None, source.readline)
            if not line:
                break
            if line.strip():
                await server.handle(line)
        if server.running is not None:
            await asyncio.gather(server.running, return_exceptions=True)
    finally:
        await agent.aclose()
