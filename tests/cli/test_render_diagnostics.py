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


@pytest.mark.parametrize("command", ["render", "run"])
def test_each_warning_is_printed_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """Validation and the build both see a missing or outside context file: one line
    each, in `validate`'s words, at the manifest's line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside.md").write_text("not the workspace's\n")
    (tmp_path / "reply.yaml").write_text("- text: Done.\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: a\nidentity: x\nworkspace: ws\nmodel: scripted:reply.yaml\n"
        "context_files: [MISSING.md, ../outside.md]\n",
        "utf-8",
    )
    args = ["--dry-run", "--prompt-only"] if command == "render" else ["--no-session", "-p", "hi"]
    outcome = assemble(capsys, command, "agent.yaml", *args)
    assert outcome.code == 0, outcome.err
    warnings = [line for line in outcome.err.splitlines() if "warning:" in line]
    # one line per problem (validation's words; the build saw each at the same place)
    assert len(warnings) == 2, warnings
    assert warnings[0] == (
        "agent.yaml:6:17: warning: context file MISSING.md not found in the workspace "
        "[context_files[0]]"
    )
    assert warnings[1].startswith(
        "agent.yaml:6:29: warning: context file ../outside.md is outside the workspace"
    )
