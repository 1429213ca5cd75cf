"""The server over real HTTP on 127.0.0.1: the token on every request, the host
checked, nothing but GET and HEAD, the security headers on every answer, no name
leading out of the roots."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from view_corpus import results_file, shipping_session

from assembler.view.server import ViewServer, make_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ViewServer]:
    data = tmp_path / "data"
    shipping_session(tmp_path, data)
    results = results_file(tmp_path / "r.jsonl", {"fix": ["passed"]})
    served = make_server([data], [results])
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()
    thread.join(timeout=10)


def get(
    server: ViewServer, path: str, *, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Host": host} if host else {}
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_it_listens_on_the_loopback_address_only(server: ViewServer) -> None:
    assert server.server_address[0] == "127.0.0.1" and server.port > 0
    assert server.url.startswith(f"http://127.0.0.1:{server.port}/?token=")
    assert len(server.token) >= 40


@pytest.mark.parametrize(
    "path",
    ["/", "/?token=", "/?token=wrong", "/static/view.js", "/session/0/x.jsonl", "/live-list"],
)
def test_a_request_without_the_token_is_refused(server: ViewServer, path: str) -> None:
    status, _, body = get(server, path)
    assert status == 403 and b"token" in body
    assert b"<" not in body  # no page, no data


def test_pages_with_the_token(server: ViewServer) -> None:
    token = server.token
    status, headers, body = get(server, f"/?token={token}")
    assert status == 200 and b"shipping-fixer" in body
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "http" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer" and headers["x-frame-options"] == "DENY"
    status, headers, _ = get(server, f"/static/view.js?token={token}")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert get(server, f"/results/0?token={token}")[0] == 200
    assert get(server, f"/results/5?token={token}")[0] == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_nothing_changes_anything(server: ViewServer, method: str) -> None:
    status, _, _ = get(server, f"/?token={server.token}", method=method)
    assert status == 405


def test_a_foreign_host_gets_nothing(server: ViewServer) -> None:
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding)."""
    status, _, _ = get(server, f"/?token={server.token}", host=f"evil.example:{server.port}")
    assert status == 403
    assert get(server, f"/?token={server.token}", host=f"localhost:{server.port}")[0] == 200


@pytest.mark.parametrize(
    "name", ["0/../../etc/passwd", "0/%2e%2e/%2e%2e/etc/passwd.jsonl", "/etc/passwd", "9/x.jsonl"]
)
def test_no_path_leads_out_of_the_roots(server: ViewServer, name: str) -> None:
    status, _, body = get(server, f"/session/{quote(name)}?token={server.token}")
    assert status == 404 and b"root:" not in body
