"""Issue 22's escape corpus, the network: with `network: off` no TCP, UDP or Unix-socket
connection leaves a command; with `network: allow` only `allow_hosts`, only through the
proxy. Every listener is a real socket on this machine's loopback (or a Unix socket
outside the workspace), and each case first reaches it unconfined."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from escapes import Place, needs_seccomp, run

pytestmark = [needs_seccomp]


@dataclass
class Listener:
    """A loopback listener that records who reached it."""

    sock: socket.socket
    seen: list[bytes] = field(default_factory=list)
    event: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def reached(self, wait: float = 3.0) -> bool:
        return self.event.wait(wait)


def _serve_stream(listener: Listener) -> None:
    while True:
        try:
            conn, _ = listener.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(2)
            try:
                listener.seen.append(conn.recv(100))
            except OSError:
                listener.seen.append(b"")
            listener.event.set()


def _serve_datagram(listener: Listener) -> None:
    while True:
        try:
            data = listener.sock.recv(100)
        except OSError:
            return
        listener.seen.append(data)
        listener.event.set()


@pytest.fixture
def tcp() -> Iterator[Listener]:
    listener = Listener(socket.create_server(("127.0.0.1", 0)))
    threading.Thread(target=_serve_stream, args=(listener,), daemon=True).start()
    yield listener
    listener.sock.close()


@pytest.fixture
def udp() -> Iterator[Listener]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    listener = Listener(sock)
    threading.Thread(target=_serve_datagram, args=(listener,), daemon=True).start()
    yield listener
    sock.close()


@pytest.fixture
def unix(place: Place) -> Iterator[Listener]:
    path = place.root / "outside-socket"  # beside the workspace, not reset between runs
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen()
    listener = Listener(sock)
    threading.Thread(target=_serve_stream, args=(listener,), daemon=True).start()
    yield listener
    sock.close()


def reaches(place: Place, listener: Listener, command: str, **block: object) -> str:
    """Prove `command` reaches `listener` unconfined, then run it confined; the
    confined result's text, after checking nothing reached the listener."""
    control = run(place.plain(), command)
    assert listener.reached(), f"the control did not connect: {control.content}"
    listener.event.clear()
    listener.seen.clear()
    result = run(place.boxed(**block), command)
    assert not listener.reached(0.5), result.content
    assert result.is_error
    return result.content


def test_tcp_with_network_off(place: Place, tcp: Listener) -> None:
    command = (
        'python3 -c "import socket; '
        f"socket.create_connection(('127.0.0.1', {tcp.port}), 3).sendall(b'hi')\""
    )
    text = reaches(place, tcp, command)
    assert "Operation not permitted" in text
    assert "[sandbox:" in text


def test_tcp_through_bash_dev_tcp(place: Place, tcp: Listener) -> None:
    reaches(place, tcp, f"echo hi > /dev/tcp/127.0.0.1/{tcp.port}")


def test_udp_with_network_off(place: Place, udp: Listener) -> None:
    command = (
        'python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        f"s.sendto(b'hi', ('127.0.0.1', {udp.port}))\""
    )
    reaches(place, udp, command)


def test_a_unix_socket_outside_the_workspace(place: Place, unix: Listener) -> None:
    path = place.root / "outside-socket"
    command = (
        'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
        f"s.connect('{path}'); s.sendall(b'hi')\""
    )
    reaches(place, unix, command)


# -- network: allow ---------------------------------------------------------------------


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        body = f"hello from {self.server.server_port}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[tuple[http.server.HTTPServer, http.server.HTTPServer]]:
    servers = []
    for _ in range(2):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
        server.hits = []  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield servers[0], servers[1]
    for server in servers:
        server.shutdown()
        server.server_close()


def fetch(url: str, *, proxy: bool = True) -> str:
    opener = "" if proxy else ", urllib.request.ProxyHandler({})"
    return (
        'python3 -c "import urllib.request; '
        f"print(urllib.request.build_opener(urllib.request.HTTPHandler(){opener})"
        f".open('{url}', timeout=5).read().decode())\""
    )


def test_allow_reaches_only_allowed_hosts_through_the_proxy(
    place: Place, web: tuple[http.server.HTTPServer, http.server.HTTPServer]
) -> None:
    allowed, blocked = web
    block = {"network": "allow", "allow_hosts": [f"127.0.0.1:{allowed.server_port}"]}
    ctx = place.boxed(**block)
    # the allowed host, through the proxy: this is what `allow` is for
    ok = run(ctx, fetch(f"http://127.0.0.1:{allowed.server_port}/ok"))
    assert ok.content == f"hello from {allowed.server_port}", ok.content
    assert allowed.hits == ["/ok"]  # type: ignore[attr-defined]
    # the control: unconfined, the other server answers
    control = run(place.plain(), fetch(f"http://127.0.0.1:{blocked.server_port}/control"))
    assert control.content == f"hello from {blocked.server_port}"
    blocked.hits.clear()  # type: ignore[attr-defined]
    # through the proxy: refused with a reason the model reads
    through = run(ctx, fetch(f"http://127.0.0.1:{blocked.server_port}/through"))
    assert through.is_error
    assert "403" in through.content
    assert f"the proxy refused 127.0.0.1:{blocked.server_port}" in through.content
    assert through.details["sandbox"]["refused"] == [f"127.0.0.1:{blocked.server_port}"]
    # around the proxy (no proxy set): nothing there to reach, allowed or not
    for server in (blocked, allowed):
        around = run(ctx, fetch(f"http://127.0.0.1:{server.server_port}/around", proxy=False))
        assert around.is_error, around.content
    assert blocked.hits == []  # type: ignore[attr-defined]
    assert allowed.hits == ["/ok"]  # type: ignore[attr-defined]


def test_allow_refuses_connect_tunnels_to_other_hosts(
    place: Place, web: tuple[http.server.HTTPServer, http.server.HTTPServer]
) -> None:
    allowed, blocked = web
    ctx = place.boxed(network="allow", allow_hosts=[f"127.0.0.1:{allowed.server_port}"])
    command = (
        'python3 -c "import os, socket, urllib.parse; '
        "proxy = urllib.parse.urlsplit(os.environ['HTTPS_PROXY']); "
        "s = socket.create_connection((proxy.hostname, proxy.port), 5); "
        f"s.sendall(b'CONNECT 127.0.0.1:{blocked.server_port} HTTP/1.1\\\\r\\\\n\\\\r\\\\n'); "
        'print(s.recv(200).decode().splitlines()[0])"'
    )
    result = run(ctx, command)
    assert result.content.startswith("HTTP/1.1 403"), result.content
    assert blocked.hits == []  # type: ignore[attr-defined]


def test_allow_still_refuses_udp_and_unix_sockets(
    place: Place, udp: Listener, unix: Listener
) -> None:
    block = {"network": "allow", "allow_hosts": ["pypi.org:443"]}
    datagram = (
        'python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        f"s.sendto(b'hi', ('127.0.0.1', {udp.port}))\"; sleep 0.2; exit 1"
    )
    run(place.boxed(**block), datagram)
    assert not udp.reached(0.5)
    path = place.root / "outside-socket"
    stream = (
        'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
        f"s.connect('{path}'); s.sendall(b'hi')\""
    )
    reaches(place, unix, stream, **block)


def test_the_proxy_and_namespace_end_with_the_sandbox(place: Place) -> None:
    ctx = place.boxed(network="allow", allow_hosts=["pypi.org:443"])
    assert ctx.sandbox is not None and ctx.sandbox.proxy is not None
    path = Path(ctx.sandbox.policy().netns)
    assert path.exists()
    ctx.sandbox.close()
    assert not path.exists()
