"""Pins for the files a project's choices run (`trust_files.py`), read through the trust
question `project_code` builds: the script an MCP stdio server's arguments name, a
command found on a `PATH`, and the replay scripts that count as code. Each was a
mutant no test noticed (issue 28, round 3).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from assembler.trust import project_code
from assembler.trust_files import MAX_REPLAY_BYTES
from assembler.validation.load import load_manifest

SERVER = "MCP server `sets[0]` (command `{command}`)"


def code_of(tmp_path: Path, body: str) -> list[str]:
    (tmp_path / "agent.yaml").write_text(f"version: 1\nname: a\nidentity: Hi.\n{body}")
    return [item.description for item in project_code(load_manifest(tmp_path / "agent.yaml"))]


def stdio(command: str, args: list[str], env: str = "") -> str:
    listed = ", ".join(f'"{a}"' for a in args)
    return (
        f"tools:\n  sets:\n    - mcp:\n        command: {command}\n        args: [{listed}]\n{env}"
    )


def test_the_question_names_the_project_script_a_server_argument_runs(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text("print('serving')\n")
    (tmp_path / "-u").write_text("")  # a file named like the option is still an option
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere.py"
    outside.write_text("")
    try:
        code = code_of(
            tmp_path,
            # options, a number, an empty word, a name too long for the file system and a
            # file outside the project run nothing of the project's
            stdio("python3", ["-u", "", "x" * 5000, "server.py", "--port", "8000", str(outside)]),
        )
    finally:
        outside.unlink()
    server = SERVER.format(command="python3")
    assert code == [server, f"{server} starts in {tmp_path.resolve()}", f"{server} runs server.py"]


def test_a_bare_command_found_on_the_users_path_inside_the_project_is_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    program = tools / "serve-mcp"
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    code = code_of(tmp_path, stdio("serve-mcp", []))
    assert f"{SERVER.format(command='serve-mcp')} runs bin/serve-mcp" in code


def test_a_relative_path_entry_the_manifest_sets_is_searched_from_the_server_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path.parent)  # not the server's directory
    tools = tmp_path / "bin"
    tools.mkdir()
    program = tools / "serve-mcp"
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    body = stdio("serve-mcp", [], env="        env:\n          PATH: bin:/usr/bin\n")
    code = code_of(tmp_path, body)
    assert f"{SERVER.format(command='serve-mcp')} runs bin/serve-mcp" in code


REPLAY = "model: scripted:replay.yaml\n"


@pytest.mark.parametrize(
    ("script", "shown"),
    [
        ("steps:\n  - tool_calls:\n      - name: bash\n", "calls bash"),  # the mapping form
        ("- tool_calls:\n    - name: bash\n    - name: read\n", "calls bash, read"),
    ],
)
def test_a_replay_that_calls_tools_is_code(tmp_path: Path, script: str, shown: str) -> None:
    (tmp_path / "replay.yaml").write_text(script)
    assert code_of(tmp_path, REPLAY) == [f"replay script replay.yaml ({shown})"]


def named_replay_code(tmp_path: Path) -> list[str]:
    """The code `--model scripted:other.yaml` adds: a replay `validate` never checked."""
    (tmp_path / "agent.yaml").write_text("version: 1\nname: a\nidentity: Hi.\n")
    manifest = load_manifest(tmp_path / "agent.yaml")
    return [c.description for c in project_code(manifest, model="scripted:other.yaml")]


def test_a_replay_whose_call_has_no_name_is_code(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("- tool_calls:\n    - arguments: {}\n")
    assert named_replay_code(tmp_path) == ["replay script other.yaml (calls ?)"]


@pytest.mark.parametrize(
    "script",
    ["- text: hello\n", "answer: hello\n", "steps: {}\n", "[unclosed\n"],
)
def test_a_replay_that_only_answers_or_does_not_load_is_not_code(
    tmp_path: Path, script: str
) -> None:
    (tmp_path / "other.yaml").write_text(script)
    assert named_replay_code(tmp_path) == []


def test_a_replay_too_large_to_read_is_taken_as_code(tmp_path: Path) -> None:
    with (tmp_path / "other.yaml").open("wb") as handle:
        handle.truncate(MAX_REPLAY_BYTES + 1)  # sparse: nothing is written
    assert MAX_REPLAY_BYTES == 16 * 1024 * 1024
    assert named_replay_code(tmp_path) == [
        "replay script other.yaml (cannot be read to check its tool calls: it is "
        "16,777,217 bytes; at most 16,777,216 are allowed)"
    ]


def test_a_program_found_through_a_path_the_manifest_sets_is_its_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    tools = tmp_path / "tools"  # outside the project
    tools.mkdir()
    program = tools / "serve-mcp"
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    body = stdio("serve-mcp", [], env=f"        env:\n          PATH: {tools}\n")
    monkeypatch.setenv("PATH", os.defpath)
    assert code_of(project, body)[-1].endswith("runs ../tools/serve-mcp")
    # a directory on the user's own PATH holds what the user would run anyway
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.defpath}")
    assert not any("runs" in line for line in code_of(project, body))
