"""The escape corpus's helpers (tests/sandbox): a workspace, a directory beside it, two ways to run.

Every case runs its command twice through the real `bash` tool: first unconfined (the
positive control: the escape works, so the test can fail), then, after everything is
put back, in the sandbox, where the kernel must refuse it and leave everything outside
the workspace exactly as it was. Nothing is mocked: real bash, real Landlock and
seccomp, real sockets.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import SandboxSpec
from assembler.sandbox.support import probe
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.environment import tool_environment
from assembler.tools.processes import ProcessScope

SUPPORT = probe()
needs_landlock = pytest.mark.skipif(
    not sys.platform.startswith("linux") or SUPPORT.landlock_abi < 1, reason="needs Landlock"
)
needs_seccomp = pytest.mark.skipif(
    not (SUPPORT.seccomp and SUPPORT.seccomp_arch), reason="needs seccomp (x86_64, aarch64)"
)


def snapshot(root: Path) -> dict[str, object]:
    """Everything below `root`: each entry's kind and content (or link target)."""
    found: dict[str, object] = {}
    for directory, subdirectories, files in os.walk(root):
        for name in [*subdirectories, *files]:
            path = Path(directory, name)
            info = path.lstat()
            key = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                found[key] = ("file", path.read_bytes(), info.st_nlink)
            else:
                found[key] = (stat.S_IFMT(info.st_mode),)
    return found


@dataclass
class Place:
    """A workspace `ws`, a directory `outside` beside it, and a fake `home` holding
    planted credentials; `setup` fills `outside` (again) before each run."""

    root: Path
    setup: Callable[[Path], None] = lambda outside: None
    scopes: list[ProcessScope] = field(default_factory=list)
    sandboxes: list[Sandbox] = field(default_factory=list)

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def reset(self) -> None:
        for directory in (self.ws, self.outside):
            if directory.exists():
                shutil.rmtree(directory)
            directory.mkdir(parents=True)
        self.setup(self.outside)

    def env(self) -> dict[str, str]:
        return {**tool_environment(os.environ), "HOME": str(self.home)}

    def plain(self) -> ToolContext:
        scope = ProcessScope()
        self.scopes.append(scope)
        return ToolContext(workspace=self.ws, timeout=30, env=self.env(), processes=scope)

    def boxed(self, **block: object) -> ToolContext:
        spec = SandboxSpec.from_data({"filesystem": "workspace-write", "network": "off", **block})
        sandbox = Sandbox.start(spec, self.ws, self.ws / "agent.yaml", home=str(self.home))
        assert sandbox is not None
        self.sandboxes.append(sandbox)
        scope = ProcessScope()
        self.scopes.append(scope)
        return ToolContext(
            workspace=self.ws, timeout=30, env=self.env(), sandbox=sandbox, processes=scope
        )

    def close(self) -> None:
        async def stop() -> None:
            for scope in self.scopes:
                await scope.aclose()

        asyncio.run(stop())
        for sandbox in self.sandboxes:
            sandbox.close()


def run(ctx: ToolContext, command: str) -> ToolResult:
    async def call() -> ToolResult:
        return await BASH_TOOL.execute({"command": command}, ctx)

    return asyncio.run(call())


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def escape_is_refused(
    place: Place,
    command: str,
    escaped: Callable[[], bool],
    *,
    settle: float = 0.0,
    **block: object,
) -> ToolResult:
    """The positive control, then the sandboxed run; the sandboxed result."""
    place.reset()
    control = run(place.plain(), command)
    assert wait_for(escaped, max(settle, 0.1) + 5), f"the control did not escape: {control}"
    place.reset()
    before = snapshot(place.outside)
    result = run(place.boxed(**block), command)
    time.sleep(settle)
    assert not escaped(), result.content
    assert snapshot(place.outside) == before, result.content
    return result
