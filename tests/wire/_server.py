"""A real HTTP server on 127.0.0.1 that answers from a queue of scripted replies.

The provider tests talk to it through the official SDKs, so what is tested is the real
wire: headers, JSON bodies, server-sent events, chunked transfer encoding, and what
happens when a connection is cut halfway through a stream. Every request it receives
is recorded for the test to inspect.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class StreamReply:
    """A `text/event-stream` response made of pre-encoded SSE frames.

    `cut_after` sends only that many frames, then drops the connection without ending
    the chunked body: the client sees a broken stream, as when a proxy or server dies.
    `end_early` instead ends the body cleanly after `cut_after` frames (no error, but
    the stream is incomplete).
    """

    frames: tuple[bytes, ...]
    cut_after: int | None = None
    end_early: bool = False
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ErrorReply:
    """A JSON error response, e.g. 429 with a tiny `retry-after-ms`."""

    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RawReply:
    """A response sent byte for byte: a recorded real exchange (`wire.recorded`), or an
    empty HTTP 200 as some servers send when they fail internally."""

    status: int
    content_type: str
    body: bytes


Reply = StreamReply | ErrorReply | RawReply
Responder = Callable[[RecordedRequest], Reply]
"""Decides the reply from the request, like a real server (used when no reply is queued)."""
Check = Callable[[Any], "ErrorReply | None"]
"""Validates a request body as the real API does: an error reply rejects it before any
scripted reply is used (`OpenAIServer.check`, `AnthropicServer.check`)."""


@dataclass
class _State:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    responder: Responder | None = None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes: without this, Nagle's algorithm
        # and the client's delayed ACK hold the body back about 40 ms per response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        state = self.server.state
        received = RecordedRequest(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        rejection = self.server.check(body) if self.path == self.server.endpoint else None
        with state.lock:
            state.requests.append(received)
            reply = state.replies.popleft() if state.replies and rejection is None else None
            responder = state.responder
        if rejection is not None:
            self._send_json(rejection.status, rejection.body, rejection.headers)
            return
        if reply is None and responder is not None:
            reply = responder(received)
        if self.path != self.server.endpoint:
            self._send_json(404, {"error": {"message": f"test server: no route {self.path}"}}, ())
        elif reply is None:
            self._send_json(
                500,
                {"error": {"message": "test server: no scripted reply left"}},
                (("x-should-retry", "false"),),
            )
        elif isinstance(reply, ErrorReply):
            self._send_json(reply.status, reply.body, reply.headers)
        elif isinstance(reply, RawReply):
            self._send_raw(reply)
        else:
            self._send_stream(reply)

    def _send_raw(self, reply: RawReply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)
        self.wfile.flush()

    def _send_json(self, status: int, body: Any, headers: tuple[tuple[str, str], ...]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_stream(self, reply: StreamReply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        frames = reply.frames if reply.cut_after is None else reply.frames[: reply.cut_after]
        for frame in frames:
            self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
            self.wfile.flush()
        if reply.cut_after is not None and not reply.end_early:
            self.close_connection = True  # no terminating chunk: the body is cut
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, endpoint: str, check: Check) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.endpoint = endpoint
        self.check = check
        self.state = _State()


class ScriptedHTTPServer:
    """Start with `with ...:`; queue replies with `add`; read `requests` afterwards."""

    endpoint = "/"

    def __init__(self) -> None:
        self._server = _Server(self.endpoint, self.check)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def check(self, body: Any) -> ErrorReply | None:
        """The real API's validation of a request body (None: accepted)."""
        return None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """What to give the SDK as `base_url`."""
        return self.url

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def add(self, *replies: Reply) -> None:
        with self._server.state.lock:
            self._server.state.replies.extend(replies)

    def respond_with(self, responder: Responder) -> None:
        """Answer every request that finds no queued reply by calling `responder`."""
        with self._server.state.lock:
            self._server.state.responder = responder

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event frame: optional `event:` line, one `data:` line, blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
