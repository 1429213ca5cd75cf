"""Every command and Python example the README shows runs as shown.

The `sh` blocks' `assemble ...` lines run in order in a private copy of the
repository (a run edits the example), and the Python examples of the SDK and testing
sections run there too. Commands that need a real model's API key are expected to
fail with the message that names the key, which is what a reader without one sees.
"""

from __future__ import annotations

import os
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
NEEDS_A_KEY = ("openai:", "anthropic:", "memory consolidate")  # real models


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


def assemble_commands() -> list[str]:
    commands = []
    for block in blocks("sh"):
        for raw in block.splitlines():
            for part in raw.split(" #", 1)[0].split("&&"):
                line = part.strip()
                if line.startswith("assemble "):
                    commands.append(line)
    return commands


def test_the_readme_shows_the_main_commands() -> None:
    commands = assemble_commands()
    for expected in (
        "assemble validate agents/",
        "assemble render --dry-run agents/shipping-fixer.yaml",
    ):
        assert expected in commands
    assert any(c.startswith("assemble run ") for c in commands)


def test_the_first_lines_are_the_two_setup_commands() -> None:
    first, second = blocks("sh")[:2]
    assert "pip install ." in first and "assemble run /tmp/demo/agents/" in first
    assert "assemble render --dry-run agents/shipping-fixer.yaml" in first
    assert "pip install -e '.[test]'" in second and "pytest" in second
    ci = (README.parent / ".ci" / "run").read_text()
    assert second.strip() in ci


@pytest.mark.slow
def test_every_assemble_command_runs(shipping: Path) -> None:
    demo = shipping.parent / "demo"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONUTF8"] = "1"
    executable = [sys.executable, "-m", "assembler"]
    for command in assemble_commands():
        argv = [arg.replace("/tmp/demo", str(demo)) for arg in shlex.split(command)[1:]]
        if argv[:1] == ["run"] and "/tmp/demo" in command:
            demo.mkdir(exist_ok=True)
            for name in ("agents", "examples"):
                subprocess.run(["cp", "-r", str(shipping / name), str(demo)], check=True)
        done = subprocess.run(
            [*executable, *argv],
            cwd=shipping,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert "Traceback" not in done.stderr, (command, done.stderr)
        if any(marker in command for marker in NEEDS_A_KEY):
            assert done.returncode == 1, command
            assert "_API_KEY" in done.stderr, (command, done.stderr)
        else:
            assert done.returncode == 0, (command, done.stdout, done.stderr)


@pytest.mark.parametrize("section", ["## Python SDK", "## Testing your agents"])
def test_the_python_examples_run(
    section: str, shipping: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text()
    body = text.split(section, 1)[1]
    code = re.search(r"```python\n(.*?)```", body, re.S)
    assert code is not None
    script = shipping / "example.py"
    source = code.group(1)
    if "def test_" in source:
        name = re.search(r"def (test_\w+)", source)
        assert name is not None
        source += f"\n{name.group(1)}()\n"
    else:  # the SDK example runs the replay: point it at the scripted model, as the manifest does
        assert "agents/shipping-fixer.yaml" in source
    script.write_text(source)
    monkeypatch.chdir(shipping)
    runpy.run_path(str(script), run_name="__main__")
