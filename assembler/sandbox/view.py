"""The effective sandbox as people read it: in `render`, the audit trace and tool results."""

from __future__ import annotations

from typing import Any

from assembler.sandbox.spec import DEFAULT_HIDDEN, Reach, SandboxSpec

TEMPORARY = "$TMPDIR (private)"


def describe(spec: SandboxSpec | None, reach: Reach | None) -> dict[str, Any]:
    """`{filesystem, network, writable, hidden, allow_hosts, unconfined}` of a sandbox
    (`writable` resolved, `hidden` as written); `{filesystem: off, network: on}` for
    none."""
    if spec is None or reach is None or not spec.confines:
        return {"filesystem": "off", "network": "on"}
    shown: dict[str, Any] = {"filesystem": reach.filesystem, "network": reach.network}
    if reach.filesystem != "off":
        shown["writable"] = [*reach.writable, TEMPORARY]
        shown["hidden"] = list(dict.fromkeys((*DEFAULT_HIDDEN, *spec.hidden)))
    if reach.network == "allow":
        shown["allow_hosts"] = [str(h) for h in reach.hosts]
    if spec.unconfined:
        shown["unconfined"] = list(spec.unconfined)
    return shown


def one_line(shown: dict[str, Any]) -> str:
    """`filesystem workspace-write (writes: ws, $TMPDIR), network off`."""
    text = f"filesystem {shown.get('filesystem')}"
    if shown.get("writable"):
        text += " (writes: " + ", ".join(str(w) for w in shown["writable"]) + ")"
    text += f", network {shown.get('network')}"
    if shown.get("allow_hosts"):
        text += " (" + ", ".join(shown["allow_hosts"]) + ")"
    return text
