"""The local HTTP server of `assemble view`, on the standard library's `http.server`
(docs/decisions.md has the measurements behind that choice).

Security, in the order a request meets it:

* bound to 127.0.0.1 only, on a free port the kernel picks (or `--port`);
* the `Host` header must name that address (or `localhost`) and port, so a web page
  that points a domain of its own at 127.0.0.1 (DNS rebinding) gets nothing;
* the random token of the printed URL must be in every request's query
  (`hmac.compare_digest`), as Jupyter does; without it: 403 and nothing else;
* GET and HEAD only: nothing can be changed through the server;
* every page is escaped HTML with a Content-Security-Policy that allows the view's own
  script and style and no other origin, `nosniff`, no referrer, no framing, no caching.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from assembler.view.app import App, Reply
from assembler.view.html import CSP

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 15.0


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, app: App, token: str, port: int = 0) -> None:
        self.app = app
        self.token = token
        self.stopping = threading.Event()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def shutdown(self) -> None:
        self.stopping.set()
        super().shutdown()


def make_server(
    roots: list[Path], results: list[Path], *, port: int = 0, token: str | None = None
) -> ViewServer:
    token = token or secrets.token_urlsafe(32)
    return ViewServer(App(roots, results, token), token, port)


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return "assemble-view"

    def log_message(self, format: str, *args: object) -> None:
        return None  # requests are not logged: the URL carries the token

    def _allowed(self) -> bool:
        host = self.headers.get("Host", "")
        if host not in (f"127.0.0.1:{self.server.port}", f"localhost:{self.server.port}"):
            self._send(Reply(403, "text/plain; charset=utf-8", b"forbidden: unknown host\n"))
            return False
        query = dict(parse_qsl(urlsplit(self.path).query))
        given = query.get("token", "")
        if not hmac.compare_digest(given.encode(), self.server.token.encode()):
            self._send(
                Reply(
                    403, "text/plain; charset=utf-8", b"forbidden: the token is missing or wrong\n"
                )
            )
            return False
        return True

    def do_GET(self) -> None:
        self._get(head=False)

    def do_HEAD(self) -> None:
        self._get(head=True)

    def _refuse(self) -> None:
        self._send(Reply(405, "text/plain; charset=utf-8", b"read-only: only GET and HEAD\n"))

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _get(self, *, head: bool) -> None:
        if not self._allowed():
            return
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        query = dict(parse_qsl(parts.query))
        if path.startswith("/live/") and not head:
            key = path.removeprefix("/live/")
            after = int(query["after"]) if query.get("after", "").lstrip("-").isdigit() else -1
            self._stream(self.server.app.session_events(key, after))
            return
        if path == "/live-list" and not head:
            self._stream(self.server.app.list_events(query))
            return
        try:
            reply = self.server.app.handle(path, query)
        except Exception:  # a bug of ours: a plain 500, never a traceback to the page
            reply = Reply(500, "text/plain; charset=utf-8", b"internal error\n")
        self._send(reply, head=head)

    def _send(self, reply: Reply, *, head: bool = False) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(reply.body)

    def _stream(self, events: Iterator[tuple[str, str] | None]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        quiet_since = time.monotonic()
        try:
            for event in events:
                if self.server.stopping.is_set():
                    return
                if event is None:
                    if time.monotonic() - quiet_since > HEARTBEAT_SECONDS:
                        self.wfile.write(b": still here\n\n")
                        self.wfile.flush()
                        quiet_since = time.monotonic()
                    self.server.stopping.wait(POLL_SECONDS)
                    continue
                name, data = event
                lines = "".join(f"data: {line}\n" for line in data.split("\n"))
                self.wfile.write(f"event: {name}\n{lines}\n".encode())
                self.wfile.flush()
                quiet_since = time.monotonic()
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception:  # the session went away or became unreadable: end the stream
            return
