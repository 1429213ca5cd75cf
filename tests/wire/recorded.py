"""Real exchanges with real model servers, replayed by the loopback servers.

`tests/data/wire/<server>/<case>/` holds what llama-cpp-python's server, llama.cpp's
`llama-server` and a LiteLLM proxy actually sent (see its README.md): the request, the
status and the raw response bytes. `recording(...)` loads one; its `reply()` makes the
loopback server send those bytes unchanged, so the providers are tested against what
those servers send rather than against a guess of it.

The `*_like` responders go one step further: they answer each request the way the
recorded server did for a request of that shape (a `null` content is refused with the
recorded HTTP 500, a forced `tool_choice` gets the recorded tool-call stream, ...), so a
whole agent run can be played against them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from wire._server import RawReply, RecordedRequest, Reply

DATA = Path(__file__).resolve().parents[1] / "data" / "wire"

LLAMA_CPP_PYTHON_CONTEXT = 2048
"""`n_ctx` of the recorded llama-cpp-python server."""


@dataclass(frozen=True)
class Recording:
    """One recorded exchange: what was sent, and what the real server answered."""

    name: str
    request: dict[str, Any]
    status: int
    content_type: str
    body: bytes

    def reply(self) -> RawReply:
        return RawReply(self.status, self.content_type, self.body)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSON payloads of the `data:` lines, in order (`[DONE]` left out)."""
        out = []
        for line in self.body.decode("utf-8").splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line.removeprefix("data: ")))
        return out


@cache
def recording(name: str) -> Recording:
    """`recording("llama-cpp-python/chat-stream")`."""
    folder = DATA / name
    request = json.loads((folder / "request.json").read_text(encoding="utf-8"))
    status = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    return Recording(
        name=name,
        request=request,
        status=int(status["status"]),
        content_type=str(status["content_type"]),
        body=(folder / "response.txt").read_bytes(),
    )


def _not_recorded(what: str) -> RawReply:
    body = json.dumps({"error": {"message": f"test server: nothing recorded for {what}"}})
    return RawReply(501, "application/json", body.encode())


def llama_cpp_python_like(request: RecordedRequest) -> Reply:
    """Answer as llama-cpp-python 0.3.36 (`chatml-function-calling`) did when recorded."""
    body: dict[str, Any] = request.body if isinstance(request.body, dict) else {}
    messages: list[dict[str, Any]] = body.get("messages", [])
    for message in messages:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            if "content" not in message:  # its chat template fails: an empty 200
                return recording("llama-cpp-python/assistant-content-omitted").reply()
            if message["content"] is None:  # its request validation: HTTP 500
                return recording("llama-cpp-python/assistant-content-null").reply()
    size = sum(len(str(m.get("content") or "")) for m in messages)
    if size > 3 * LLAMA_CPP_PYTHON_CONTEXT:  # too long for n_ctx: an empty 200
        return recording("llama-cpp-python/context-overflow-stream").reply()
    choice = body.get("tool_choice")
    if body.get("tools"):
        if isinstance(choice, dict):
            return recording("llama-cpp-python/tool-call-stream-forced").reply()
        if choice == "auto":
            return recording("llama-cpp-python/tool-choice-auto-stream").reply()
        if choice is None:
            return recording("llama-cpp-python/tools-without-tool-choice-stream").reply()
        return _not_recorded(f"tool_choice {choice!r}")
    if messages and messages[-1].get("role") == "tool":
        return recording("llama-cpp-python/assistant-content-empty-no-tools").reply()
    return recording("llama-cpp-python/chat-stream").reply()
