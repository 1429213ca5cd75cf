"""The answers to `initialize` and `session/new`, and the session modes, as the JSON
the SDK's connection writes, made without the SDK.

These are what an editor waits for before it can use the agent, and the SDK's
schema module takes most of the server's start-up to import (bench/README.md, issue
27). Both the early phase (`early`, before the SDK is loaded) and the SDK's router
(`server`) answer with these same dictionaries, so the two paths cannot drift apart;
tests/acp/test_acp_answers.py checks each against the SDK's own models (validated,
then dumped as its connection dumps a result: the same JSON, key for key and in
order). Nothing here imports the SDK or pydantic.
"""

from __future__ import annotations

import json
from typing import Any, Final

from assembler.version import __version__

PROTOCOL_VERSION: Final = 1
"""The protocol version answered (`acp.PROTOCOL_VERSION`, checked by a test)."""

MODES: Final[tuple[tuple[str, str, str], ...]] = (
    ("default", "Ask", "Calls an `ask` rule names are asked about here before they run."),
    (
        "accept-edits",
        "Accept edits",
        "File edits inside the workspace run without asking; other asks are asked.",
    ),
    (
        "deny-asks",
        "Deny asks",
        "Every call that would be asked about is refused; the model reads why.",
    ),
    ("bypass", "Bypass", "Every call that is not denied runs without asking."),
)
"""The permission modes as session modes: id, name, description (`modes`)."""


def initialize_result(*, recorded: bool, title: str) -> dict[str, Any]:
    """What `initialize` answers: sessions are listed, loaded, resumed and forked only
    when they are recorded; every session can be closed."""
    # in the order of the SDK's fields, as its dump writes them
    sessions: dict[str, Any] = {"list": {}, "fork": {}, "resume": {}} if recorded else {}
    sessions["close"] = {}
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": recorded,
            "promptCapabilities": {"embeddedContext": True},
            "sessionCapabilities": sessions,
        },
        "agentInfo": {"name": "agent-assembler", "title": title, "version": __version__},
    }


def mode_state_result(current: str | None) -> dict[str, Any]:
    """The session's modes and the current one (an agent without rules is in `default`)."""
    return {
        "currentModeId": current or "default",
        "availableModes": [
            {"id": mode, "name": name, "description": description}
            for mode, name, description in MODES
        ],
    }


def new_session_result(session_id: str, mode: str | None) -> dict[str, Any]:
    """What `session/new` (and `session/fork`) answers."""
    return {"sessionId": session_id, "modes": mode_state_result(mode)}


def response_line(request_id: object, result: dict[str, Any]) -> bytes:
    """A result as the SDK's connection writes it: one compact JSON line."""
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_response_line(request_id: object, code: int, message: str, data: Any) -> bytes:
    """An error as the SDK's connection writes a `RequestError`."""
    error = {"code": code, "message": message, "data": data}
    return _line({"jsonrpc": "2.0", "id": request_id, "error": error})


def _line(payload: dict[str, Any]) -> bytes:
    return (json.dumps(payload, separators=(",", ":")) + "\n").encode("utf-8")
