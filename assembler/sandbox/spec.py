"""The manifest's `sandbox:` block, typed: what a reviewer reads, before any path is resolved.

`SandboxSpec` keeps paths as written (`~/.cache/pip`, `build`, `/tmp`), because the
workspace they are relative to is bound later (an evaluation copies it for every
task). `resolve` turns a spec and a workspace into `Reach`: absolute, resolved paths,
which is what sub-agents are compared by (a child may only narrow its parent's reach)
and what `runtime` turns into a per-call `Policy`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

Filesystem = Literal["read-only", "workspace-write", "off"]
Network = Literal["off", "allow", "on"]

FILESYSTEM_ORDER: tuple[Filesystem, ...] = ("read-only", "workspace-write", "off")
NETWORK_ORDER: tuple[Network, ...] = ("off", "allow", "on")

#: Credential stores hidden from every sandboxed process; a manifest can add to them.
DEFAULT_HIDDEN: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.docker",
    "~/.kube",
    "~/.gnupg",
    "~/.password-store",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.vault-token",
    "~/.local/share/keyrings",
)

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
HOST = re.compile(rf"(?:\*\.)?(?:{_LABEL}\.)*{_LABEL}\Z")
"""A host name or IPv4 address in `allow_hosts`, optionally `*.` for every subdomain."""


@dataclass(frozen=True)
class HostRule:
    """One `allow_hosts` entry: `pypi.org:443`, `*.pythonhosted.org` (ports 80 and 443)."""

    host: str
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> HostRule:
        """`HostRule` from `host[:port]`; ValueError saying what is wrong."""
        host, colon, port = text.strip().lower().rpartition(":")
        if not colon:
            host, port = port, ""
        if not host or not HOST.match(host):
            raise ValueError(f"`{text}` is not a host name (`pypi.org`, `*.example.com`)")
        if colon:
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"`{text}`: the port must be a number from 1 to 65535")
            return cls(host, int(port))
        return cls(host)

    @property
    def ports(self) -> frozenset[int]:
        return frozenset((80, 443) if self.port is None else (self.port,))

    def matches(self, host: str, port: int) -> bool:
        """Whether a connection to `host:port` is allowed by this rule."""
        host = host.lower().rstrip(".")
        if port not in self.ports:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    def covers(self, other: HostRule) -> bool:
        """Whether every connection `other` allows, this rule allows too."""
        if not other.ports <= self.ports:
            return False
        if self.host.startswith("*."):
            return other.host.lstrip("*").endswith(self.host[1:])
        return other.host == self.host

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class SandboxSpec:
    """`filesystem`, `network`, and the lists as written. `hidden` holds what the
    manifest adds to `DEFAULT_HIDDEN`. `unconfined` names the Python tools a reviewer
    read and accepts running unconfined (`pkg.mod:function`). `anchor` is None for an
    agent's own block; for a block a sub-agent inherited, the parent's workspace, which
    `workspace-write` and relative paths then mean."""

    filesystem: Filesystem
    network: Network = "off"
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    unconfined: tuple[str, ...] = ()
    anchor: Path | None = None

    @classmethod
    def from_data(cls, raw: Mapping[str, Any]) -> SandboxSpec:
        """From the validated mapping (the schema checked every type). YAML reads an
        unquoted `off` as false and `on` as true: they mean `off` and `on` here."""
        filesystem: Filesystem = _word(raw["filesystem"])  # type: ignore[assignment]
        default: Network = "on" if filesystem == "off" else "off"
        network: Network = _word(raw.get("network", default))  # type: ignore[assignment]
        return cls(
            filesystem=filesystem,
            network=network,
            writable=tuple(raw.get("writable", ())),
            hidden=tuple(raw.get("hidden", ())),
            allow_hosts=tuple(raw.get("allow_hosts", ())),
            unconfined=tuple(raw.get("unconfined", ())),
        )

    @property
    def confines(self) -> bool:
        """Whether anything is confined at all (`{filesystem: off}` is not)."""
        return self.filesystem != "off" or self.network != "on"

    def hosts(self) -> tuple[HostRule, ...]:
        return tuple(HostRule.parse(h) for h in self.allow_hosts)

    def resolve(self, workspace: Path, home: str | None = None) -> Reach:
        """What this spec lets a process of an agent working in `workspace` reach."""
        base = Path(os.path.abspath(self.anchor or workspace))
        home = home or os.path.expanduser("~")
        writable: list[str] = []
        if self.filesystem == "workspace-write":
            writable.append(real(base))
            writable += [real(expand(p, base, home)) for p in self.writable]
        hidden = [real(expand(p, base, home)) for p in (*DEFAULT_HIDDEN, *self.hidden)]
        return Reach(
            filesystem=self.filesystem,
            network=self.network,
            writable=tuple(dict.fromkeys(writable)),
            hidden=tuple(dict.fromkeys(hidden)),
            hosts=self.hosts() if self.network == "allow" else (),
        )

    def inherited_by(self, parent_workspace: Path) -> SandboxSpec:
        """This spec as a sub-agent that declares none gets it: its paths still mean
        what they meant for the parent."""
        return replace(self, anchor=self.anchor or Path(os.path.abspath(parent_workspace)))

    def with_hidden(self, more: tuple[str, ...]) -> SandboxSpec:
        """This spec hiding `more` (absolute paths) too: a child keeps what its parent hid."""
        return replace(self, hidden=tuple(dict.fromkeys((*self.hidden, *more))))

    def moved(self, old: Path, new: Path) -> SandboxSpec:
        """This spec for an agent moved from workspace `old` to `new` (an evaluation's
        copy): an inherited anchor inside `old` moves along."""
        anchor = self.anchor
        if anchor is not None and anchor.is_relative_to(old):
            return replace(self, anchor=new / anchor.relative_to(old))
        return self


def for_child(
    parent: SandboxSpec | None,
    parent_workspace: Path,
    child: SandboxSpec | None,
    child_workspace: Path,
) -> tuple[SandboxSpec | None, list[str]]:
    """The sandbox a sub-agent runs in, and how its own block widens its parent's
    (a `validate` error; the agent is not built). A child without a block inherits the
    parent's, paths meaning what they meant for the parent; a child with one keeps
    it, and hides what the parent hid too. Under an unconfined parent the child's own
    block (or none) applies."""
    if parent is None or not parent.confines:
        return child, []
    if child is None:
        return parent.inherited_by(parent_workspace), []
    problems = child.resolve(child_workspace).widens(parent.resolve(parent_workspace))
    base = parent.anchor or parent_workspace
    hidden = tuple(
        h if h.startswith(("~", "/")) else os.path.normpath(os.path.join(base, h))
        for h in parent.hidden
    )
    return child.with_hidden(hidden), problems


@dataclass(frozen=True)
class Reach:
    """A spec resolved for one workspace: absolute paths, parsed hosts."""

    filesystem: Filesystem
    network: Network
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    hosts: tuple[HostRule, ...] = field(default=())

    def widens(self, parent: Reach) -> list[str]:
        """How this reach goes beyond `parent`'s (empty when it only narrows it)."""
        problems: list[str] = []
        if FILESYSTEM_ORDER.index(self.filesystem) > FILESYSTEM_ORDER.index(parent.filesystem):
            problems.append(f"`filesystem: {self.filesystem}` is wider than `{parent.filesystem}`")
        elif self.filesystem == "workspace-write" and parent.filesystem == "workspace-write":
            outside = [p for p in self.writable if not any(inside(p, q) for q in parent.writable)]
            problems += [f"it may write {p}, which the parent may not" for p in outside]
        if NETWORK_ORDER.index(self.network) > NETWORK_ORDER.index(parent.network):
            problems.append(f"`network: {self.network}` is wider than `{parent.network}`")
        elif self.network == "allow" and parent.network == "allow":
            extra = [h for h in self.hosts if not any(p.covers(h) for p in parent.hosts)]
            problems += [f"`allow_hosts` has {h}, which the parent does not allow" for h in extra]
        return problems


def _word(value: object) -> str:
    if value is False:
        return "off"
    if value is True:
        return "on"
    return str(value)


def expand(path: str, base: Path, home: str) -> str:
    """`~` to `home`, relative to `base`, normalised (not resolved)."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(os.path.join(base, path))


def real(path: str | Path) -> str:
    """`path` with symbolic links resolved, as the kernel sees it."""
    return os.path.realpath(path)


def inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or below it (both absolute, normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")
