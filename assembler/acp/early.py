"""The first requests of a connection, answered before the SDK is loaded.

An editor starts the agent, sends `initialize`, then `session/new`, and the user can
type once both are answered. The SDK's router needs its schema module (about 280
pydantic models) before it reads the first line, and building those is most of the
server's start-up (bench/README.md, issue 27). So `serve` answers these two requests
here, with the same answers (`answers`) and the same agent opening (`opening`) as the
SDK's router, and loads the SDK once a session is open (while the user types) or as
soon as a request comes that is not one of these two.

Correctness first: a request is answered here only when its parameters are plainly
valid for the SDK's own models (the shapes below, each field of the right JSON type,
no `_meta`), so the SDK would have accepted it and called the same method; anything
else (a field the checks do not know, a wrong type, an editor's MCP servers, a
notification) goes to the SDK, which answers it as it always did.
tests/acp/test_acp_early.py compares the answers with the SDK's, message for message.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from assembler.acp.answers import (
    error_response_line,
    initialize_result,
    new_session_result,
    response_line,
)
from assembler.acp.opening import Builder, Opened, log, note_surroundings, open_agent
from assembler.errors import AssemblerError


class EarlyPhase:
    """Answers `initialize` and `session/new` by hand; keeps what the SDK's side
    needs afterwards (the editor's capabilities as sent, the sessions opened)."""

    def __init__(self, build: Builder, *, name: str, recorded: bool, workspace: Path) -> None:
        self.build = build
        self.name = name
        self.recorded = recorded
        self.workspace = workspace
        self.capabilities: dict[str, Any] | None = None
        """The `clientCapabilities` of an `initialize` answered here (None: none)."""
        self.opened: list[Opened] = []

    async def answer(self, line: bytes) -> bytes | None:
        """The response to the message `line`, or None when the SDK must handle it."""
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or not _plain_id(message.get("id", None)):
            return None
        params = message.get("params")
        if not isinstance(params, dict):
            return None
        if message.get("method") == "initialize" and _initialize_params(params):
            self.capabilities = params.get("clientCapabilities")
            result = initialize_result(recorded=self.recorded, title=self.name)
            return response_line(message["id"], result)
        if message.get("method") == "session/new" and _new_session_params(params):
            return await self._new_session(message["id"], params["cwd"])
        return None

    async def _new_session(self, request_id: object, cwd: str) -> bytes:
        try:
            opened = await open_agent(self.build, None)
        except AssemblerError as e:  # as `server._answered` says it
            log(f"error: {e}")
            return error_response_line(request_id, -32603, str(e), {"type": type(e).__name__})
        except Exception as e:  # a bug: as the SDK's connection reports one
            logging.exception("Unhandled error while handling request method=%s", "session/new")
            try:
                data = json.loads(str(e))
            except Exception:
                data = {"details": str(e)}
            return error_response_line(request_id, -32603, "Internal error", data)
        self.opened.append(opened)
        note_surroundings(self.workspace, cwd, None)
        return response_line(request_id, new_session_result(opened.id, _mode(opened)))

    async def aclose(self) -> None:
        """Close the agents opened here (when the SDK's side never took them)."""
        for opened in self.opened:
            await opened.agent.aclose()
        self.opened.clear()


def _mode(opened: Opened) -> str | None:
    return opened.agent.state().permission_mode


def _plain_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _initialize_params(params: dict[str, Any]) -> bool:
    """`{protocolVersion, clientCapabilities?, clientInfo?}` of the plain shapes."""
    if "_meta" in params or not _keys(params, {"protocolVersion"}, _INITIALIZE):
        return False  # a request's `_meta` becomes keyword arguments of the method
    version = params["protocolVersion"]
    if not _plain_id(version) or isinstance(version, str) or not 0 <= version <= 65535:
        return False
    capabilities = params.get("clientCapabilities", {})
    info = params.get("clientInfo", {"name": "", "version": ""})
    return _capabilities(capabilities) and _client_info(info)


_INITIALIZE = {"protocolVersion", "clientCapabilities", "clientInfo"}


def _capabilities(value: object) -> bool:
    """`{fs?: {readTextFile?, writeTextFile?}, terminal?, auth?: {terminal?}}`, flags
    booleans; the SDK's client sends `auth: {}`, Zed a `_meta` of its own."""
    if not isinstance(value, dict) or not _keys(value, set(), {"fs", "terminal", "auth"}):
        return False
    fs, auth = value.get("fs", {}), value.get("auth", {})
    return (
        isinstance(value.get("terminal", False), bool)
        and _flags(fs, {"readTextFile", "writeTextFile"})
        and _flags(auth, {"terminal"})
    )


def _flags(value: object, names: set[str]) -> bool:
    if not isinstance(value, dict) or not _keys(value, set(), names):
        return False
    return all(isinstance(value[name], bool) for name in names & value.keys())


def _client_info(value: object) -> bool:
    if not isinstance(value, dict) or not _keys(value, {"name", "version"}, {"title"}):
        return False
    return all(isinstance(value[key], str) for key in ("name", "version", "title") if key in value)


def _new_session_params(params: dict[str, Any]) -> bool:
    """`{cwd, mcpServers: []}`: the editor offers no MCP servers of its own."""
    if "_meta" in params or not _keys(params, {"cwd", "mcpServers"}, set()):
        return False
    return isinstance(params["cwd"], str) and params["mcpServers"] == []


def _keys(value: dict[Any, Any], required: set[str], optional: set[str]) -> bool:
    """`value` has the `required` keys and no others than `optional` ones, except a
    `_meta` object (metadata the SDK's models keep and nothing reads)."""
    meta = value.get("_meta", {})
    keys = value.keys() - {"_meta"}
    return isinstance(meta, dict) and required <= keys <= required | optional
