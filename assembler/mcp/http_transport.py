"""The streamable HTTP transport: the server is a URL, reached with `spec.headers`.

The SDK turns an HTTP error without a JSON-RPC body (a 401 from an auth proxy, a
502 from a gateway) into a generic "Server returned an error response", losing the
status the user needs to fix the problem. So every response goes through a hook that
remembers the last error status, and failures quote it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as ProtocolError

from assembler.mcp.diagnostics import exception_text
from assembler.mcp.transport import Transport
from assembler.urls import shown_url

if TYPE_CHECKING:
    from assembler.mcp.transport import Streams

#: The least time a response (an event stream above all) may take to send data.
MIN_READ_TIMEOUT = 300.0


class HTTPTransport(Transport):
    """A streamable HTTP endpoint at `spec.url`."""

    #: The last error status a POST got (`HTTP 401 Unauthorized`), until quoted.
    last_error: str | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Streams]:
        spec = self.spec
        timeout = httpx2.Timeout(spec.timeout, read=max(MIN_READ_TIMEOUT, spec.timeout))
        async with (
            httpx2.AsyncClient(
                headers=dict(spec.headers),
                timeout=timeout,
                event_hooks={"response": [self._on_response]},
            ) as client,
            streamable_http_client(spec.url or "", http_client=client) as streams,
        ):
            yield streams

    async def _on_response(self, response: httpx2.Response) -> None:
        """Remember an error status. Only POSTs count: the optional GET event
        stream may be refused (405) by design."""
        if response.status_code >= 400 and response.request.method == "POST":
            reason = response.reason_phrase or ""
            self.last_error = f"HTTP {response.status_code} {reason}".strip()

    def describe(self) -> str:
        # From the manifest's text: a `${VAR}` in the path must not show its value.
        return shown_url(self.spec.url_template, self.spec.url)

    def launch_problem(self) -> str | None:
        return None if self.spec.url else "it has neither a `command` nor a `url`"

    def start_error_cause(self, exc: BaseException) -> str | None:
        status = self.last_error
        if status is not None:
            if status.startswith(("HTTP 401", "HTTP 403")):
                return (
                    f"the server answered {status}: check the credentials in its `headers` "
                    "(for example `Authorization: Bearer ${TOKEN}`)"
                )
            return f"the server answered {status}"
        if isinstance(exc, ProtocolError) and exc.code == types.CONNECTION_CLOSED:
            return "the connection closed during initialisation"
        if isinstance(exc, httpx2.HTTPError):
            return f"cannot reach {self.describe()}: {exception_text(exc)}"
        return None

    def timeout_note(self) -> str:
        return f" (last answer: {self.last_error})" if self.last_error is not None else ""

    def call_error_note(self) -> str:
        status, self.last_error = self.last_error, None
        return f" ({status})" if status is not None else ""
