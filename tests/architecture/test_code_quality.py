"""The style rules hold on every change: ruff (lint and format) and mypy --strict.

They run inside the suite so that `.ci/run` (the README's test command) enforces them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_ruff_lint() -> None:
    done = run("ruff", "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_ruff_format() -> None:
    done = run("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_strict() -> None:
    done = run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr
