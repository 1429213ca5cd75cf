"""The filtering proxy of `network: allow`: HTTP and HTTPS to `allow_hosts`, nothing else.

Sandboxed commands reach it as `HTTP(S)_PROXY` on `127.0.0.1` inside their private
network namespace (`netns`), the only address there is. It takes `CONNECT host:port`
(HTTPS and any TLS: the bytes are piped, never read) and plain HTTP requests in
absolute form (`GET http://host/path`), checks the host and port against the rules,
and connects from the assembler's own network on the command's behalf. A refused
request gets `403` with a reason naming the host and `allow_hosts`, and is recorded,
so the tool result can say what the sandbox refused.

It runs on an event loop of its own, in a thread, so it serves whichever event loop
(or none) the agent runs on, and a slow upstream never holds up the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from assembler.sandbox.spec import HostRule

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT = 30.0
_CHUNK = 65536


@dataclass(frozen=True)
class Denial:
    """A connection the proxy refused: when (monotonic), and to what."""

    at: float
    target: str


class FilteringProxy:
    """Serves on `listener` (already listening) until `close()`."""

    def __init__(self, listener: socket.socket, rules: Sequence[HostRule]) -> None:
        self.rules = tuple(rules)
        self.denials: list[Denial] = []
        self._listener = listener
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="sandbox-proxy", daemon=True)
        self._thread.start()
        self._ready.wait()

    def allows(self, host: str, port: int) -> bool:
        return any(rule.matches(host, port) for rule in self.rules)

    def denied_since(self, mark: float) -> list[str]:
        """Targets refused since `mark` (a `time.monotonic()` value), each once."""
        return list(dict.fromkeys(d.target for d in list(self.denials) if d.at >= mark))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._client, sock=self._listener, limit=MAX_HEAD)
            )
        finally:
            self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        try:
            request = _parse(head)
        except ValueError as e:
            await _answer(writer, 400, "Bad Request", str(e))
            return
        if not self.allows(request.host, request.port):
            target = f"{request.host}:{request.port}"
            self.denials.append(Denial(time.monotonic(), target))
            await _answer(
                writer,
                403,
                "Blocked by the sandbox",
                f"blocked by the sandbox: {target} is not in the manifest's `allow_hosts`\n",
            )
            return
        try:
            upstream_reader, upstream = await asyncio.wait_for(
                asyncio.open_connection(request.host, request.port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError) as e:
            await _answer(writer, 502, "Bad Gateway", f"{request.host}:{request.port}: {e}\n")
            return
        if request.method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream.write(request.forwarded)
        await _pipe_both(reader, writer, upstream_reader, upstream)


@dataclass(frozen=True)
class _Request:
    method: str
    host: str
    port: int
    forwarded: bytes = b""  # the head to send upstream (plain HTTP only)


def _parse(head: bytes) -> _Request:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise ValueError("malformed request line")
    method, target, version = parts
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError("CONNECT needs host:port")
        return _Request(method, host.strip("[]"), int(port))
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise ValueError("only absolute http:// requests and CONNECT go through this proxy")
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [
        line
        for line in lines[1:]
        if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    forwarded = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
    return _Request(method, url.hostname, url.port or 80, forwarded.encode("latin-1"))


_HOP_HEADERS = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str, body: str) -> None:
    data = body.encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    with contextlib.suppress(OSError):
        await writer.drain()
    writer.close()


async def _pipe_both(
    client_reader: asyncio.StreamReader,
    client: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
) -> None:
    """Copy both ways until both sides are done (a half-close is passed on), then close."""
    try:
        await asyncio.gather(_pipe(client_reader, upstream), _pipe(upstream_reader, client))
    finally:
        client.close()
        upstream.close()


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(_CHUNK):
            target.write(chunk)
            await target.drain()
        if target.can_write_eof():
            target.write_eof()
    except OSError:
        target.close()
