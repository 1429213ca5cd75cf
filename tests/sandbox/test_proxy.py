"""The filtering proxy on its own: what it forwards, what it refuses and says, many at once.

It listens here on an ordinary loopback socket (in use it listens inside the sandbox's
private network); the upstreams are real loopback servers."""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from assembler.sandbox.proxy import FilteringProxy
from assembler.sandbox.spec import HostRule


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = f"{self.path} via {self.headers.get('Connection')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(upstream: int) -> Iterator[FilteringProxy]:
    listener = socket.create_server(("127.0.0.1", 0), backlog=512)
    made = FilteringProxy(listener, [HostRule.parse(f"localhost:{upstream}")])
    yield made
    made.close()
    listener.close()


def opener(proxy: FilteringProxy) -> urllib.request.OpenerDirector:
    port = proxy._listener.getsockname()[1]
    address = f"http://127.0.0.1:{port}"
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": address}))


def test_an_allowed_host_is_forwarded_without_proxy_headers(
    proxy: FilteringProxy, upstream: int
) -> None:
    text = opener(proxy).open(f"http://localhost:{upstream}/a?b=1", timeout=5).read()
    assert text == b"/a?b=1 via close"  # origin form, one request per connection


def test_a_host_outside_the_rules_is_refused_and_recorded(
    proxy: FilteringProxy, upstream: int
) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener(proxy).open(f"http://127.0.0.1:{upstream}/", timeout=5)
    assert refused.value.code == 403
    assert b"is not in the manifest's `allow_hosts`" in refused.value.read()
    assert proxy.denied_since(0) == [f"127.0.0.1:{upstream}"]


def test_nonsense_gets_a_400(proxy: FilteringProxy) -> None:
    port = proxy._listener.getsockname()[1]
    for request in (
        b"hello\r\n\r\n",
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"CONNECT x HTTP/1.1\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", port), 5) as client:
            client.sendall(request)
            assert client.recv(100).startswith(b"HTTP/1.1 400")


def test_a_hundred_connections_at_once(proxy: FilteringProxy, upstream: int) -> None:
    def fetch(n: int) -> bytes:
        return opener(proxy).open(f"http://localhost:{upstream}/{n}", timeout=30).read()

    with ThreadPoolExecutor(100) as pool:
        answers = list(pool.map(fetch, range(100)))
    assert answers == [f"/{n} via close".encode() for n in range(100)]
