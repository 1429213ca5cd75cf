"""Without the `[acp]` extra, `assemble acp` is one line naming it, before anything is
read or served. The SDK is hidden from a real subprocess by a `sitecustomize` on its
PYTHONPATH that marks the module as absent (`sys.modules[name] = None`: an import
fails, `find_spec` finds nothing), as an install without the extra would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from acp_harness import manifest


def assemble_without(hidden: str, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules[{hidden!r}] = None\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "assembler", *argv],
        env={**os.environ, "PYTHONPATH": path},
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("given", ["agent.yaml", "missing.yaml"])
def test_a_missing_sdk_is_one_line(tmp_path: Path, given: str) -> None:
    """Even before the manifest is read (a missing file is not the first problem)."""
    manifest(tmp_path, "- text: unused\n")
    done = assemble_without("acp", tmp_path, "acp", str(tmp_path / given))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: assemble acp needs the Agent Client Protocol SDK: "
        "pip install 'agent-assembler[acp]'\n"
    )


def test_a_broken_sdk_says_what_failed(tmp_path: Path) -> None:
    """The SDK is there, but a package it needs is not."""
    agent = manifest(tmp_path, "- text: unused\n")
    done = assemble_without("pydantic", tmp_path, "acp", str(agent))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: assemble acp needs the Agent Client Protocol SDK: "
        "pip install 'agent-assembler[acp]' (the Agent Client Protocol SDK could not be "
        "imported: import of pydantic halted; None in sys.modules)\n"
    )


def test_help_needs_no_sdk(tmp_path: Path) -> None:
    done = assemble_without("acp", tmp_path, "acp", "--help")
    assert done.returncode == 0, done.stderr
    assert "Agent Client Protocol" in done.stdout
    assert done.stdout.rstrip().endswith("assemble acp agents/shipping-fixer.yaml --trust")
