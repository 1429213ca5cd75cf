"""What this machine can confine, and the one refusal when it cannot give what is asked.

`assemble doctor` prints `probe()`; `require()` is called when an agent is built, before
anything runs: a manifest that asks for a sandbox this machine cannot give is refused
with one message naming what is missing and the exact line that runs the agent
unconfined. Nothing falls back to running without the sandbox silently.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from assembler.errors import SandboxError
from assembler.sandbox import landlock, seccomp
from assembler.sandbox.spec import SandboxSpec

#: The Landlock ABI below which a feature is missing, and what it costs.
LANDLOCK_NOTES = {
    2: "links and renames between directories are refused even inside the workspace",
    3: "truncate(2) by path is refused by seccomp instead",
    6: "commands may signal processes outside their own call",
}


@dataclass(frozen=True)
class Support:
    """What the kernel offers, as `assemble doctor` shows it."""

    platform: str
    landlock_abi: int
    seccomp: bool
    seccomp_arch: str | None
    user_namespaces: bool
    root: bool
    bwrap: str | None

    def missing(self, spec: SandboxSpec) -> list[str]:
        """What `spec` needs that this machine does not have."""
        if not spec.confines:
            return []
        if not self.platform.startswith("linux"):
            return [f"a Linux kernel (this is {self.platform}: Landlock and seccomp are Linux's)"]
        missing = []
        if spec.filesystem != "off" and self.landlock_abi < 1:
            missing.append(
                "Landlock (Linux 5.13 or later, with `landlock` in the kernel's `lsm=` list)"
            )
        if spec.network != "on" and not (self.seccomp and self.seccomp_arch):
            missing.append("seccomp filters for this architecture (x86_64 or aarch64)")
        if spec.network == "allow" and not (self.root or self.user_namespaces):
            missing.append(
                "unprivileged user namespaces (for the private network of `network: allow`)"
            )
        return missing

    def lines(self) -> list[tuple[str, str]]:
        """(what, state) rows for `assemble doctor`."""
        abi = self.landlock_abi
        landlock_state = f"ABI {abi}" if abi else "not available"
        notes = [note for version, note in sorted(LANDLOCK_NOTES.items()) if 0 < abi < version]
        if notes:
            landlock_state += " (" + "; ".join(notes) + ")"
        return [
            ("platform", self.platform),
            ("landlock", landlock_state),
            (
                "seccomp",
                f"yes ({self.seccomp_arch})"
                if self.seccomp and self.seccomp_arch
                else "not available",
            ),
            ("user namespaces", "yes" if self.user_namespaces else "no"),
            (
                "running as",
                "root (capabilities are dropped in the sandbox)"
                if self.root
                else "an ordinary user",
            ),
            ("bubblewrap", self.bwrap or "not installed (not needed)"),
        ]


def probe() -> Support:
    """What this machine supports (reads a few `/proc` files; starts nothing)."""
    linux = sys.platform.startswith("linux")
    arch = seccomp.native_arch() if linux else None
    return Support(
        platform=sys.platform,
        landlock_abi=landlock.abi() if linux else 0,
        seccomp=linux and seccomp.available(),
        seccomp_arch=_arch_name() if arch is not None else None,
        user_namespaces=linux and _user_namespaces(),
        root=linux and os.geteuid() == 0,
        bwrap=shutil.which("bwrap"),
    )


def require(spec: SandboxSpec | None, manifest: Path) -> None:
    """Refuse (`SandboxError`) a sandbox this machine cannot give."""
    if spec is None or not spec.confines:
        return
    missing = probe().missing(spec)
    if missing:
        raise SandboxError(
            f"{manifest}: the manifest asks for `sandbox: {{filesystem: {spec.filesystem}, "
            f"network: {spec.network}}}`, which this machine cannot give: it lacks "
            + "; ".join(missing)
            + ". To run this agent unconfined, write `sandbox: {filesystem: off}` in the "
            "manifest instead (`assemble doctor` shows what this machine supports)."
        )


def _arch_name() -> str:
    import platform

    return platform.machine()


def _user_namespaces() -> bool:
    """Whether an unprivileged process may make a user namespace (the sysctls that
    forbid it; AppArmor's restriction shows only when one is made)."""
    for path, forbidding in (
        ("/proc/sys/user/max_user_namespaces", "0"),
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
    ):
        try:
            if Path(path).read_text().strip() == forbidding:
                return False
        except OSError:
            continue
    return True
