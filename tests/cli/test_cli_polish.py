"""The command line a newcomer meets (issue 12): `-h`, "did you mean" for a misspelled
command, an example at the end of every command's help, plain output under
`NO_COLOR` or in a pipe, and a spinner on stderr while `run -p` waits on a terminal
(never when stderr is not one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from clirun import assemble

from assembler.cli.main import _COMMANDS, cli
from assembler.cli.spinner import FRAMES

ESC = "\x1b["


def _all_commands() -> list[list[str]]:
    """Every command path: `[]` (the main group), `["run"]`, `["memory", "add"]`, ..."""
    paths: list[list[str]] = [[]]
    ctx = click.Context(cli)
    for name in sorted(_COMMANDS):
        command = cli.get_command(ctx, name)
        paths.append([name])
        if isinstance(command, click.Group):
            paths += [[name, sub] for sub in command.list_commands(ctx)]
    return paths


COMMANDS = _all_commands()


def test_the_walk_finds_every_command() -> None:
    assert ["memory", "consolidate"] in COMMANDS and ["trust", "remove"] in COMMANDS
    assert ["sessions", "show"] in COMMANDS and ["sessions", "to-test"] in COMMANDS
    assert len(COMMANDS) == 1 + len(_COMMANDS) + 5 + 3 + 3


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "assemble")
def test_h_is_help_and_help_ends_with_an_example(
    path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    long = assemble(capsys, *path, "--help")
    short = assemble(capsys, *path, "-h")
    assert (long.code, short.code) == (0, 0)
    assert short.out == long.out
    lines = [line.strip() for line in long.out.rstrip().splitlines()]
    example = lines[lines.index("Example:") + 1 :]
    assert example, long.out
    assert all("assemble " in line for line in example), example
    if path and path != ["schema"]:  # the example runs this very command
        assert any(f"assemble {' '.join(path)}" in line for line in example), example


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["rnu", "x.yaml"], "Did you mean 'run'?"),
        (["validat", "x"], "Did you mean 'validate'?"),
        (["memory", "lsit", "x"], "Did you mean 'list'?"),
        (["trust", "ad"], "Did you mean 'add'?"),
    ],
)
def test_a_misspelled_command_gets_did_you_mean(
    args: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = assemble(capsys, *args)
    assert outcome.code == 2
    misspelled = args[1] if args[0] in ("memory", "trust") else args[0]
    assert f"No such command '{misspelled}'" in outcome.err
    assert suggestion in outcome.err


def test_an_unknown_command_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "zzz")
    assert outcome.code == 2
    assert "Did you mean" not in outcome.err
    assert f"Commands: {', '.join(sorted(_COMMANDS))}." in outcome.err


# --- terminals ----------------------------------------------------------------------

SLOW_TOOL = '''
import time


def nap() -> str:
    """Sleep a little."""
    time.sleep(1.2)
    return "rested"
'''


@pytest.fixture
def slow_project(tmp_path: Path) -> Path:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "slow_tools.py").write_text(SLOW_TOOL, "utf-8")
    (agents / "script.yaml").write_text(
        "- tool_calls: [{name: nap, arguments: {}}, {name: nope, arguments: {}}]\n- text: Done.\n",
        "utf-8",
    )
    (agents / "agent.yaml").write_text(
        "version: 1\nname: slow\nidentity: You rest.\nmodel: scripted:script.yaml\n"
        "tools: {sets: [{python: slow_tools:nap}]}\n",
        "utf-8",
    )
    return agents / "agent.yaml"


def _run(manifest: Path, *, tty: bool, env: dict[str, str]) -> tuple[int, str, str]:
    """`assemble run -p` in a subprocess, stderr on a pseudo-terminal when `tty`."""
    args = [sys.executable, "-m", "assembler", "run", str(manifest), "--trust", "--no-session"]
    environment = {**os.environ, "TERM": "xterm", **env}
    if "NO_COLOR" not in env:  # the developer's own setting must not decide the test
        environment.pop("NO_COLOR", None)
    if not tty:
        done = subprocess.run(
            [*args, "-p", "hi"], capture_output=True, text=True, env=environment, timeout=60,
            check=False,
        )  # fmt: skip
        return done.returncode, done.stdout, done.stderr
    master, slave = os.openpty()
    process = subprocess.Popen(
        [*args, "-p", "hi"], stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
        env=environment,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    process.wait(timeout=60)
    return process.returncode, out, b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_a_spinner_shows_while_the_tool_runs(slow_project: Path) -> None:
    code, out, err = _run(slow_project, tty=True, env={})
    assert code == 0, err
    assert out == "Done.\n"
    assert "running nap, nope" in err
    assert any(f"\r{frame} running nap, nope" in err for frame in FRAMES)
    assert ESC in err  # colours on a terminal, without NO_COLOR


def test_no_color_gives_plain_output_on_a_terminal(slow_project: Path) -> None:
    code, _, err = _run(slow_project, tty=True, env={"NO_COLOR": "1"})
    assert code == 0
    assert ESC not in err
    assert "← nope not run: there is no tool named `nope`" in err


def test_a_pipe_gets_neither_colour_nor_spinner(slow_project: Path) -> None:
    code, out, err = _run(slow_project, tty=False, env={})
    assert code == 0
    assert out == "Done.\n"
    assert ESC not in err and "\r" not in err
    assert "running nap" not in err
