"""A diagnostic about no file in particular names the manifest, never `<manifest>`
(issue 12: "render errors name the manifest file")."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble


def test_a_tool_clash_names_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clash_tools.py").write_text(
        'def read(path: str) -> str:\n    """Read, again."""\n    return path\n', "utf-8"
    )
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: a\nidentity: x\ntools: {sets: [read, {python: clash_tools:read}]}\n",
        "utf-8",
    )
    outcome = assemble(capsys, "render", "--dry-run", "--prompt-only", "agent.yaml")
    assert outcome.code == 0, outcome.err
    assert outcome.err.startswith("agent.yaml: warning: tool `read` from Python tool")
    assert "<manifest>" not in outcome.err
