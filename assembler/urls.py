"""URLs as they may be shown: without the credentials `${VAR}` often puts in them.

A manifest's `base_url` or an MCP server's `url` can carry `user:password@` or a
`?key=` token from the environment. Banners, events and error messages show the
scheme, host, port and path only.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def display_url(url: str) -> str:
    """`url` without user:password, query and fragment, which may hold credentials.

    An unparsable URL becomes `<invalid URL>` rather than being echoed back.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def is_local_url(url: str | None) -> bool:
    """Whether `url` points at this machine (Ollama, llama.cpp, LM Studio, vLLM...)."""
    if not url:
        return False
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in _LOCAL_HOSTS or host.endswith(".localhost") or host.startswith("127.")
