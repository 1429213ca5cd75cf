"""URLs as they may be shown: without the credentials `${VAR}` often puts in them.

A manifest's `base_url` or an MCP server's `url` can carry `user:password@`, a `?key=`
token or a path segment from the environment (`https://api.telegram.org/bot${TOKEN}/`).
What is shown is made from the manifest's text, never from the interpolated value: each
reference reads `${NAME}` (a default written as `${NAME:-value}` is left out too), and
user-info, query and fragment are dropped, since they may hold credentials written in
full. Banners, events, trust questions and error messages all show URLs this way.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

# Any `${NAME...}`: the syntax interpolation reads and any other spelling of a reference,
# since what is inside the braces after the name may be a value (a default).
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}")


def mask_references(text: str) -> str:
    """`text` with every `${NAME...}` reduced to `${NAME}`."""
    return _REFERENCE.sub(lambda match: f"${{{match.group(1)}}}", text)


def display_url(url: str) -> str:
    """`url` without user:password, query and fragment, which may hold credentials,
    and with each `${NAME...}` reference reduced to `${NAME}`. Pass the URL as the
    manifest writes it (its template), so no interpolated value is ever shown.

    An unparsable URL becomes `<invalid URL>` rather than being echoed back.
    """
    try:
        parts = urlsplit(mask_references(url))
    except ValueError:
        return "<invalid URL>"
    # The host and port as written: a `${VAR}` in either is not a number to check nor a
    # name to lowercase, and an IPv6 address keeps its brackets.
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def shown_url(template: str | None, value: str | None) -> str:
    """The URL to show for a setting written as `template` (the manifest's text) that
    became `value`: the template when there is one, else the value itself."""
    return display_url(template or value or "")


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
