"""Running a line through the real bash, for the pins that check what it does."""

from __future__ import annotations

import subprocess
from pathlib import Path


def bash(line: str, cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`bash [options] -c line` in `cwd`, no input, its output captured (never raises
    for the exit status)."""
    return subprocess.run(
        ["bash", *options, "-c", line],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
