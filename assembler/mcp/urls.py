"""URLs as they may appear in messages: without the parts that carry credentials.

`${VAR}` interpolation often puts a token in a URL's query (`?api_key=...`) or its
user:password, and messages end up in terminals and CI logs. This module imports
only the standard library, so any code (the providers' `base_url` too) can use it
without loading the MCP SDK.
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
