"""`assemble schema --output`, the schema's stable versioned `$id`, and click's shell
completion for bash, zsh and fish."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble

from assembler.manifest.schema import schema, schema_text

SCHEMA_ID = "urn:agent-assembler:schema:agent:1"


def test_the_schema_id_is_stable_and_names_the_manifest_version() -> None:
    """Editors and caches key on `$id`: it changes only with the manifest format."""
    document = schema()
    assert document["$id"] == SCHEMA_ID
    version = document["properties"]["version"]["const"]
    assert document["$id"].rsplit(":", 1)[1] == str(version)


def test_schema_output_writes_exactly_what_schema_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "editor" / "agent.schema.json"
    written = assemble(capsys, "schema", "--output", str(target))
    assert (written.code, written.out, written.err) == (0, "", "")
    assert target.read_text("utf-8") == schema_text()
    assert json.loads(target.read_text("utf-8"))["$id"] == SCHEMA_ID
    target.write_text("old")
    assert assemble(capsys, "schema", "-o", str(target)).code == 0  # replaced whole
    assert target.read_text("utf-8") == schema_text()


def test_schema_output_to_an_impossible_place_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    result = assemble(capsys, "schema", "--output", str(tmp_path / "file" / "s.json"))
    assert result.code == 1
    assert result.err.startswith(
        f"error: cannot write the schema to {tmp_path / 'file' / 's.json'}: "
    )
    assert result.err.count("\n") == 1


def complete(variable: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assembler"],
        env={**os.environ, "_ASSEMBLE_COMPLETE": variable, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _assemble_completion assemble"),
        ("zsh", "#compdef assemble"),
        ("fish", "complete --no-files --command assemble"),
    ],
)
def test_each_shell_gets_a_completion_script(shell: str, marker: str) -> None:
    done = complete(f"{shell}_source")
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout
    assert "_ASSEMBLE_COMPLETE" in done.stdout


def test_completion_knows_the_commands_and_the_templates() -> None:
    commands = complete("bash_complete", COMP_WORDS="assemble ", COMP_CWORD="1")
    names = {line.split(",", 1)[1] for line in commands.stdout.splitlines()}
    assert {"init", "validate", "render", "run", "schema"} <= names
    templates = complete("bash_complete", COMP_WORDS="assemble init x --template ", COMP_CWORD="4")
    assert templates.stdout.splitlines() == [
        "plain,minimal", "plain,coding", "plain,reviewer", "plain,team",
    ]  # fmt: skip
