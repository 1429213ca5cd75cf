"""Inputs that ended in "internal error" (exit 70) get a located message instead
(issue 11, item 23): each is run through `assemble validate` and
`assemble render --dry-run`, which must exit 1 with `file:line:col` (or, for what only
rendering meets, a warning and a prompt), never 70.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble

HEAD = "version: 1\nname: t\nidentity: You help.\n"
LONG = "x" * 300

CASES = {
    "nested list in builtin": (
        "tools: {sets: [{builtin: [[read]]}]}\n",
        'agent.yaml:4:27: error: ["read"] is not one of',
    ),
    "null in builtin": (
        "tools: {sets: [{builtin: [read, null]}]}\n",
        "agent.yaml:4:33: error: null is not one of",
    ),
    "long name in skills": (f"skills: [{LONG}]\n", "agent.yaml:4:10: error: the name"),
    "long name in workspace": (f"workspace: {LONG}\n", "agent.yaml:4:12: error: the name"),
    "long name in context_files": (
        f"context_files: [{LONG}]\n",
        "agent.yaml:4:17: error: the name",
    ),
    "long name in an extension path": (
        f"extensions: [{{path: {LONG}.py}}]\n",
        "agent.yaml:4:21: error: the name",
    ),
    "long name in a scripted model": (
        f"model: scripted:{LONG}\n",
        "agent.yaml:4:8: error: the name",
    ),
    "long name in a template file": (  # the loader reads it, and says so first
        f"prompt: {{tools: {{file: {LONG}}}}}\n",
        "agent.yaml:4:24: error: template file xxx",
    ),
    "long name in the memory store": (
        f"memory: {{store: {LONG}}}\n",
        "agent.yaml:4:17: error: the name",
    ),
    "macro that calls itself": (
        'prompt: {identity: {template: "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"}}\n',
        "agent.yaml:4:32: error: the template recursed too deeply",
    ),
}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", [["validate"], ["render", "--dry-run"]])
def test_a_former_crash_is_a_located_error(
    case: str, command: list[str], here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body, expected = CASES[case]
    (here / "agent.yaml").write_text(HEAD + body, "utf-8")
    outcome = assemble(capsys, *command, "agent.yaml")
    output = outcome.out + outcome.err
    assert outcome.code == 1, output
    assert expected in output
    assert "internal error" not in output


def test_the_long_name_message_says_what_the_limit_is(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "agent.yaml").write_text(HEAD + f"workspace: {LONG}\n", "utf-8")
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.out.splitlines() == [
        "agent.yaml:4:12: error: the name `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...` is 300 "
        "bytes long; file systems allow at most 255 bytes per name [workspace]",
        "1 error(s), 0 warning(s) in 1 manifest",
    ]


def test_a_multibyte_name_is_measured_in_bytes(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "agent.yaml").write_text(HEAD + f"skills: [{'技' * 90}]\n", "utf-8")  # 270 bytes
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.code == 1
    assert "is 270 bytes long" in outcome.out


def test_a_symlink_loop_at_agents_md(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default context file is a link to itself: validate warns, and render skips
    the file with a warning and prints the prompt (it died with RuntimeError)."""
    (here / "AGENTS.md").symlink_to("AGENTS.md")
    (here / "agent.yaml").write_text(HEAD, "utf-8")
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.code == 0
    assert (
        "agent.yaml:1:1: warning: context file AGENTS.md is a symbolic link that cannot be followed"
        in outcome.out
    )
    outcome = assemble(capsys, "render", "--dry-run", "--prompt-only", "agent.yaml")
    assert outcome.code == 0, outcome.err
    assert outcome.out.startswith("## identity\nYou help.\n")
    # validation's warning, once: the build saw the same problem at the same place
    assert outcome.err.splitlines() == [
        "agent.yaml:1:1: warning: context file AGENTS.md is a symbolic link that cannot be "
        "followed (a loop, or a missing target); it is skipped"
    ]


def test_a_fifo_context_file_does_not_hang_render(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    os.mkfifo(here / "NOTES.md")
    (here / "agent.yaml").write_text(HEAD + "context_files: [NOTES.md]\n", "utf-8")
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert "context file NOTES.md is not a regular file" in outcome.out
    outcome = assemble(capsys, "render", "--dry-run", "--prompt-only", "agent.yaml")
    assert outcome.code == 0
    assert "### NOTES.md" not in outcome.out
