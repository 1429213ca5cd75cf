"""A template override `file:` is checked before it is read, and only a small regular
file is read (issue 11, item 5).

Before: `validate` read the file first and checked where it was after, so `/dev/zero`
died with MemoryError (1.5 GB) and a FIFO hung `validate` for ever. Each test runs
the command in a subprocess with a timeout, so a regression fails instead of hanging
the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAD = "version: 1\nname: t\nidentity: You help.\n"


def _validate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler", *args, "agent.yaml"],
        cwd=root,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _manifest(root: Path, file: str) -> None:
    (root / "agent.yaml").write_text(HEAD + f"prompt:\n  tools:\n    file: {file}\n", "utf-8")


@pytest.mark.parametrize("command", [["validate"], ["render", "--dry-run"]])
def test_a_fifo_template_is_refused_without_reading(tmp_path: Path, command: list[str]) -> None:
    os.mkfifo(tmp_path / "tools.j2")
    _manifest(tmp_path, "tools.j2")
    result = _validate(tmp_path, *command)
    assert result.returncode == 1, result.stderr
    output = result.stdout + result.stderr
    assert (
        "agent.yaml:6:11: error: template file tools.j2 cannot be read: it is not a regular file"
        in output
    )
    assert "internal error" not in output


@pytest.mark.parametrize("command", [["validate"], ["render", "--dry-run"]])
def test_a_link_to_dev_zero_inside_the_project_is_refused(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "tools.j2").symlink_to("/dev/zero")
    _manifest(tmp_path, "tools.j2")
    result = _validate(tmp_path, *command)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "template file tools.j2 is outside the manifest's directory" in output
    assert "MemoryError" not in output and "internal error" not in output


def test_dev_zero_named_directly_is_refused_before_reading(tmp_path: Path) -> None:
    _manifest(tmp_path, "/dev/zero")
    result = _validate(tmp_path, "validate")
    assert result.returncode == 1
    assert "template file /dev/zero is outside the manifest's directory" in result.stdout


def test_a_template_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    from assembler.manifest.model import MAX_TEMPLATE_FILE_BYTES

    (tmp_path / "tools.j2").write_bytes(b"{{ tools|length }}" + b" " * MAX_TEMPLATE_FILE_BYTES)
    _manifest(tmp_path, "tools.j2")
    result = _validate(tmp_path, "validate")
    assert result.returncode == 1
    assert f"at most {MAX_TEMPLATE_FILE_BYTES:,} are allowed" in result.stdout


def test_the_resource_loader_refuses_a_fifo_swapped_in_after_loading(tmp_path: Path) -> None:
    """A reload reads the file again: a FIFO put there meanwhile is refused, and the
    text read at load stays in use."""
    from assembler.resources.loader import ResourceLoader
    from assembler.validation.load import load_manifest

    (tmp_path / "tools.j2").write_text("{{ tools|length }} tools", "utf-8")
    _manifest(tmp_path, "tools.j2")
    loader = ResourceLoader(load_manifest(tmp_path / "agent.yaml"))
    assert loader.reload().templates["tools"].text == "{{ tools|length }} tools"
    (tmp_path / "tools.j2").unlink()
    os.mkfifo(tmp_path / "tools.j2")
    snapshot = loader.reload()  # returns at once: the FIFO is never opened for a blocking read
    assert snapshot.templates["tools"].text == "{{ tools|length }} tools"
    (issue,) = snapshot.diagnostics
    assert "not a regular file" in issue.message
