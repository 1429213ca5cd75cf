"""`assemble validate` runs no project code, starts no process and opens no socket.

The project below is booby-trapped: its extension file, its extension package and
its Python tool modules write a marker file when imported, its MCP stdio servers
would write one when started, and it points at an MCP HTTP server and a model
endpoint. Validation runs in-process through the CLI with process creation and
outbound connections replaced by functions that fail the test, and afterwards no
marker exists and none of the project's modules is in `sys.modules`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble

from assembler.validation.load import load_manifest

TRAP = """\
import pathlib
pathlib.Path({marker!r}).write_text("{name} was imported")
"""

MANIFEST = """\
version: 1
name: booby-trapped
identity: You fix bugs with `edit`, and quote fees with `quote`.
model:
  provider: openai
  name: gpt-4o-mini
  base_url: http://127.0.0.1:9/v1
tools:
  servers:
    local: {{command: ./server.sh, args: ["{markers}/mcp-args"]}}
    shell: {{command: sh, args: ["-c", "touch {markers}/mcp-sh"]}}
    remote: {{url: "http://127.0.0.1:9/mcp"}}
  sets:
    - builtin: coding
    - python: [tools_pkg.fees:quote]
    - mcp: local
    - mcp: shell
    - mcp: remote
skills: [skills]
extensions:
  - path: ext/guard.py
  - module: guard_pkg.guard
prompt:
  tools: {{file: tools.md.j2}}
"""

PROJECT_MODULES = ("guard", "guard_pkg", "guard_pkg.guard", "tools_pkg", "tools_pkg.fees")


def _trap(path: Path, markers: Path, name: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TRAP.format(marker=str(markers / name), name=name) + body, "utf-8")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    markers = tmp_path / "markers"
    markers.mkdir()
    setup = "\n\ndef setup(api, options):\n    pass\n"
    _trap(root / "ext" / "guard.py", markers, "ext-file", setup)
    _trap(root / "guard_pkg" / "__init__.py", markers, "ext-package", "")
    _trap(root / "guard_pkg" / "guard.py", markers, "ext-module", setup)
    _trap(root / "tools_pkg" / "__init__.py", markers, "tool-package", "")
    _trap(
        root / "tools_pkg" / "fees.py",
        markers,
        "tool-module",
        "\n\ndef quote(x: int) -> int:\n    return x\n",
    )
    server = root / "server.sh"
    server.write_text(f"#!/bin/sh\ntouch {markers}/mcp-server\n", "utf-8")
    server.chmod(0o755)
    (root / "skills" / "fix").mkdir(parents=True)
    (root / "skills" / "fix" / "SKILL.md").write_text(
        "---\nname: fix\ndescription: Fix bugs.\n---\n", "utf-8"
    )
    (root / "tools.md.j2").write_text("{% for t in tools %}- {{ t.name }}\n{% endfor %}", "utf-8")
    (root / "agent.yaml").write_text(MANIFEST.format(markers=markers), "utf-8")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def no_processes_no_sockets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace every way to start a process or connect a socket with a recorder that
    also raises, so neither can happen and each attempt is listed."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{what}{args[1:2]!r}")
            raise AssertionError(f"validate tried {what}")

        return refused

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("subprocess.Popen"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        monkeypatch.setattr(os, name, refuse(f"os.{name}"), raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("socket.create_connection"))
    return attempts


def _markers(project: Path) -> list[str]:
    return sorted(p.name for p in (project.parent / "markers").iterdir())


def test_validate_runs_no_project_code(
    project: Path, no_processes_no_sockets: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before_modules, before_path = set(sys.modules), list(sys.path)
    outcome = assemble(capsys, "validate", "agent.yaml", "--format", "json")
    assert no_processes_no_sockets == []
    assert _markers(project) == []
    assert {m for m in sys.modules if m in PROJECT_MODULES} == set()
    from_project = [
        name
        for name in set(sys.modules) - before_modules
        if Path(getattr(sys.modules[name], "__file__", None) or "/").is_relative_to(project)
    ]
    assert from_project == []
    assert sys.path == before_path
    # The project is valid: validate looked at everything and found nothing wrong.
    assert outcome.code == 0, outcome.out
    assert '"errors": 0' in outcome.out and '"warnings": 0' in outcome.out


def test_validate_reports_problems_in_trapped_code_without_running_it(
    project: Path, no_processes_no_sockets: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "ext" / "guard.py").write_text(
        TRAP.format(marker=str(project.parent / "markers" / "x"), name="x") + "def set_up(): ...\n"
    )
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.code == 1
    assert "`guard` has no top-level function `setup` [extensions[0].path]" in outcome.out
    assert no_processes_no_sockets == []
    assert _markers(project) == []


def test_load_manifest_runs_no_project_code_either(
    project: Path, no_processes_no_sockets: list[str]
) -> None:
    manifest = load_manifest(project / "agent.yaml", env={})
    assert manifest.name == "booby-trapped"
    assert no_processes_no_sockets == []
    assert _markers(project) == []
    assert {m for m in sys.modules if m in PROJECT_MODULES} == set()


def test_validating_the_shipping_example_runs_none_of_its_code(
    shipping: Path,
    no_processes_no_sockets: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(shipping)
    outcome = assemble(capsys, "validate", "agents")
    assert outcome.code == 0, outcome.out
    assert no_processes_no_sockets == []
    assert "protect_tests" not in sys.modules
    assert not any(m == "shipping" or m.startswith("shipping.") for m in sys.modules)


def test_the_guards_work(no_processes_no_sockets: list[str]) -> None:
    """The traps of this file would catch a process or a connection."""
    with pytest.raises(AssertionError):
        subprocess.run(["true"], check=False)
    with pytest.raises(AssertionError):
        socket.create_connection(("127.0.0.1", 9))
    with socket.socket() as s, pytest.raises(AssertionError):
        s.connect(("127.0.0.1", 9))
    assert len(no_processes_no_sockets) == 3
