"""Validation cases found in review: typos that must not pass, files that must not
hang, templates that must not reach outside the project."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from clirun import assemble


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_misspelled_identity_does_not_hide_a_manifest_in_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "agents" / "reviewer.yaml", "version: 1\nname: r\nidentty: x\n")
    result = assemble(capsys, "validate", str(tmp_path / "agents"))
    assert result.code == 1
    assert "unknown key `identty`; did you mean `identity`?" in result.out
    assert "missing required key `identity`" in result.out


def test_a_typo_in_a_builtin_allow_list_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write(
        tmp_path / "agent.yaml",
        """\
        version: 1
        name: typo
        identity: x
        tools:
          sets:
            - builtin: coding
              allow: [read, red]
        """,
    )
    result = assemble(capsys, "validate", str(manifest))
    assert result.code == 1
    assert (
        "agent.yaml:7:21: error: `red` is not in this set (it has `read`, `bash`, `edit`, "
        "`write`); did you mean `read`? [tools.sets[0].allow[1]]"
    ) in result.out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_reported_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    result = assemble(capsys, "validate", str(tmp_path / "pipe.yaml"))
    assert result.code == 1 and "is not a regular file" in result.out
    folder = assemble(capsys, "validate", str(tmp_path))
    assert folder.code == 1 and "is not a regular file" in folder.out


def test_a_template_file_outside_the_project_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = write(tmp_path / "secret.txt", "root:x:0:0\n")
    manifest = write(
        tmp_path / "project" / "agent.yaml",
        f"version: 1\nname: leak\nidentity: x\nprompt:\n  identity: {{file: {secret}}}\n",
    )
    result = assemble(capsys, "validate", str(manifest))
    assert result.code == 1
    assert "is outside the manifest's directory and the workspace" in result.out
    rendered = assemble(capsys, "render", "--dry-run", str(manifest))
    assert rendered.code == 1 and "root:x" not in rendered.out


def test_request_options_pass_and_async_setup_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "ext.py", "async def setup(api, options):\n    pass\n")
    manifest = write(
        tmp_path / "agent.yaml",
        """\
        version: 1
        name: opts
        identity: x
        model: {provider: openai, name: m, options: {top_p: 0.9, seed: 7, max_retries: 1}}
        extensions:
          - path: ext.py
        """,
    )
    result = assemble(capsys, "validate", str(manifest))
    assert result.code == 1
    assert result.out.splitlines()[0].endswith(
        "agent.yaml:6:11: error: `ext:setup` must be a plain function, not `async def` "
        "[extensions[0].path]"
    )
    assert len(result.out.splitlines()) == 2  # that error and the summary: options pass


def test_render_dry_run_needs_no_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write(
        tmp_path / "agent.yaml",
        "version: 1\nname: s\nidentity: x\nmodel: {provider: openai, name: m, base_url: '${NOPE_UNSET_VAR}'}\n",
    )
    result = assemble(capsys, "render", "--dry-run", "--prompt-only", str(manifest))
    assert result.code == 0, result.err
    assert "warning: environment variable `NOPE_UNSET_VAR` is not set" in result.err
    assert result.err.count("NOPE_UNSET_VAR") == 1  # printed once
