"""Saying, in a tool result, that the sandbox refused something.

A command the kernel stopped sees an ordinary error (EACCES, EPERM, EXDEV, a 403 from
the proxy) and prints it its own way; a model that reads "Permission denied" without
knowing about the sandbox tries `sudo`, `chmod` or the same thing again. So when a
sandboxed command fails with such an error in its output, or the proxy refused a host
during the call, the result ends with a note naming the sandbox and its reach.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

REFUSALS = re.compile(
    r"permission denied|operation not permitted|invalid cross-device link|"
    r"read-only file system|EACCES|EPERM|EXDEV|network is unreachable|"
    r"blocked by the sandbox|tunnel connection failed: 403|response 403|"
    r"couldn't connect to server|could not resolve (?:host|proxy)|"
    r"temporary failure in name resolution|name or service not known",
    re.IGNORECASE,
)


def denial_note(
    shown: Mapping[str, Any], output: str, exit_code: int | None, refused_hosts: Sequence[str]
) -> str | None:
    """The note for a call confined as `shown` (`Sandbox.describe()`); None when
    nothing suggests the sandbox refused anything."""
    reach = _reach(shown)
    if refused_hosts:
        hosts = ", ".join(refused_hosts)
        allowed = ", ".join(shown.get("allow_hosts", [])) or "none"
        return (
            f"[sandbox: the proxy refused {hosts}: not in the manifest's `allow_hosts` "
            f"({allowed}). Retrying will not help; say which host you need.]"
        )
    if exit_code in (0, None) or not REFUSALS.search(output):
        return None
    return (
        f"[sandbox: this command runs confined ({reach}); the kernel refuses anything "
        'outside that with EACCES/EPERM ("Permission denied", "Operation not '
        'permitted", "Invalid cross-device link") and cuts connections the sandbox does '
        "not allow. If that is what failed above, retrying or sudo will not help: work "
        "inside the writable paths, or say what you need.]"
    )


def _reach(shown: Mapping[str, Any]) -> str:
    parts = [f"filesystem: {shown.get('filesystem')}"]
    if shown.get("filesystem") not in (None, "off"):
        places = ", ".join(str(w) for w in shown.get("writable", []))
        parts.append(f"writable: {places}")
    network = shown.get("network")
    if network == "allow":
        parts.append("network: only " + ", ".join(shown.get("allow_hosts", [])) + " via the proxy")
    else:
        parts.append(f"network: {network}")
    return "; ".join(parts)
