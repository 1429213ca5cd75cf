"""One agent's sandbox while it lives: its reach, private temporary directory and proxy.

Made when the agent is built (`Sandbox.start`, which refuses a sandbox this machine
cannot give), closed with it. Every process the agent starts gets `policy()`: the
reach in absolute paths, plus a temporary directory of the agent's own (its `TMPDIR`,
the one place `read-only` may write) and, with `network: allow`, the private network
and the proxy's address. `describe()` is what `render`, the audit trace and the tool
results show.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assembler.errors import SandboxError
from assembler.sandbox import netns
from assembler.sandbox.policy import Policy
from assembler.sandbox.proxy import FilteringProxy
from assembler.sandbox.spec import Reach, SandboxSpec
from assembler.sandbox.support import require
from assembler.sandbox.view import describe

TEMP_PREFIX = "assembler-sandbox-"
_PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)


class Sandbox:
    """The sandbox of one agent working in `workspace`."""

    def __init__(self, spec: SandboxSpec, workspace: Path, *, home: str | None = None) -> None:
        self.spec = spec
        self.workspace = workspace
        self.reach: Reach = spec.resolve(workspace, home)
        self._lock = threading.Lock()
        self._temp: str | None = None
        self._network: netns.PrivateNetwork | None = None
        self._proxy: FilteringProxy | None = None
        self._closed = False

    @classmethod
    def start(
        cls, spec: SandboxSpec | None, workspace: Path, manifest: Path, *, home: str | None = None
    ) -> Sandbox | None:
        """The sandbox `spec` asks for, ready to use; None for no sandbox at all.
        `SandboxError` when this machine cannot give it (nothing has run yet). `home`
        is what `~` means (default: the user's home)."""
        if spec is None or not spec.confines:
            return None
        require(spec, manifest)
        sandbox = cls(spec, workspace, home=home)
        if spec.network == "allow":
            sandbox._start_proxy(manifest)
        return sandbox

    def _start_proxy(self, manifest: Path) -> None:
        try:
            self._network = netns.create()
        except OSError as e:
            raise SandboxError(
                f"{manifest}: `network: allow` needs a private network namespace, which this "
                f"machine would not give ({e}). To run this agent unconfined, write "
                "`sandbox: {filesystem: off}` in the manifest instead."
            ) from e
        self._proxy = FilteringProxy(self._network.listener, self.reach.hosts)

    @property
    def proxy(self) -> FilteringProxy | None:
        return self._proxy

    def policy(self) -> Policy:
        """The policy of one process the agent starts now."""
        if self._closed:
            raise SandboxError("the agent's sandbox was closed")
        temp = self._temporary_directory()
        variables = {"TMPDIR": temp}
        netns_path = userns_path = ""
        if self._network is not None:
            address = f"http://127.0.0.1:{self._network.port}"
            variables.update(dict.fromkeys(_PROXY_VARIABLES, address))
            variables["NO_PROXY"] = variables["no_proxy"] = ""
            netns_path, userns_path = self._network.netns_path, self._network.userns_path
        reach = self.reach
        writable = (*reach.writable, temp) if reach.filesystem != "off" else ()
        return Policy(
            filesystem=reach.filesystem,
            network=reach.network,
            writable=writable,
            hidden=reach.hidden,
            env=variables,
            netns=netns_path,
            userns=userns_path,
        )

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with what the sandbox sets (temporary directory, proxy) on top."""
        return {**env, **self.policy().env}

    def denied_since(self, mark: float) -> list[str]:
        """Hosts the proxy refused since `mark` (`time.monotonic()`)."""
        return self._proxy.denied_since(mark) if self._proxy is not None else []

    def describe(self) -> dict[str, Any]:
        """The effective sandbox, as `render`, the trace and results show it."""
        return describe(self.spec, self.reach)

    def close(self) -> None:
        """Stop the proxy and remove the temporary directory (idempotent)."""
        with self._lock:
            self._closed = True
            temp, self._temp = self._temp, None
            proxy, self._proxy = self._proxy, None
            network, self._network = self._network, None
        if proxy is not None:
            proxy.close()
        if network is not None:
            network.close()
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    def _temporary_directory(self) -> str:
        with self._lock:
            if self._temp is None or not os.path.isdir(self._temp):
                self._temp = os.path.realpath(tempfile.mkdtemp(prefix=TEMP_PREFIX))
            return self._temp
