"""One call's sandbox, in absolute paths: what the supervisor applies before `exec`.

A `Policy` is what `spec.SandboxSpec` (the manifest's words: `~`, workspace-relative
paths, `workspace-write`) means for one process: the directories it may write, the
paths hidden from it, its private temporary directory and its network. It travels to
the supervisor as JSON (standard library only, as the supervisor imports it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Devices every sandboxed process may read and write (`> /dev/null`, `head -c 9 /dev/zero`).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


@dataclass(frozen=True)
class Policy:
    """`filesystem`: `read-only`, `workspace-write` or `off`; `writable`: every
    directory or file writes are allowed beneath (the workspace and the private
    temporary directory included), resolved; `hidden`: neither readable nor writable,
    resolved; `network`: `off`, `allow` or `on`."""

    filesystem: str
    network: str
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    devices: tuple[str, ...] = DEVICES
    readable: tuple[str, ...] = ("/",)
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables the sandbox sets for the command (`TMPDIR`, the proxy's address)."""
    netns: str = ""
    """`network: allow`: the private network namespace to enter (a `/proc/PID/fd/N` path
    of the process that holds it), and `userns` its user namespace when not root."""
    userns: str = ""

    @property
    def confines(self) -> bool:
        return self.filesystem != "off" or self.network != "on"

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "filesystem": self.filesystem,
            "network": self.network,
            "writable": list(self.writable),
            "hidden": list(self.hidden),
            "devices": list(self.devices),
            "readable": list(self.readable),
            "env": dict(self.env),
            "netns": self.netns,
            "userns": self.userns,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        return cls(
            filesystem=str(data["filesystem"]),
            network=str(data["network"]),
            writable=tuple(str(p) for p in data.get("writable", ())),
            hidden=tuple(str(p) for p in data.get("hidden", ())),
            devices=tuple(str(p) for p in data.get("devices", DEVICES)),
            readable=tuple(str(p) for p in data.get("readable", ("/",))),
            env={str(k): str(v) for k, v in dict(data.get("env", {})).items()},
            netns=str(data.get("netns", "")),
            userns=str(data.get("userns", "")),
        )
