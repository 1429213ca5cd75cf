"""The README's examples run as written, and print what the README says they print.

The blocks that can run offline are marked in the README's source (`readme_blocks`
says how). Each marked block runs in a scratch copy of the repository's examples,
with a scratch home folder and `/tmp/demo` standing for a scratch copy of its own,
never in the checkout; commands need no API key and reach no network. A block whose exit
status or output differs from the README fails with the README line and a diff.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import (
    README_DEMO,
    Block,
    Marked,
    MarkerError,
    as_the_readme_writes_it,
    marked_blocks,
    mismatch,
)

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
COPIED = ("agents", "examples", "evals", "schemas")  # what the README's examples use


def _marked() -> Marked | MarkerError:
    try:
        return marked_blocks(README.read_text("utf-8"))
    except MarkerError as e:
        return e


MARKED = _marked()
NAMES = sorted(MARKED.runs) if isinstance(MARKED, Marked) else []


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


def test_the_first_lines_are_the_two_setup_commands() -> None:
    first, second = blocks("sh")[:2]
    assert "pip install ." in first and "assemble run /tmp/demo/agents/" in first
    assert "assemble render --dry-run agents/shipping-fixer.yaml" in first
    assert "pip install -e '.[test]'" in second and "pytest" in second
    ci = (README.parent / ".ci" / "run").read_text()
    assert second.strip() in ci


@pytest.mark.slow
def test_the_first_command_runs_as_a_newcomer_types_it(tmp_path: Path) -> None:
    """The README's first line, after its install (this suite's environment is one):
    a scratch copy of the examples in /tmp/demo, the fix run on it with `--trust`
    (the example's replay calls tools, which is code), then the prompt rendered."""
    (first,) = blocks("sh")[:1]
    steps = [part.strip() for part in first.strip().split("&&")]
    install = [s for s in steps if s.startswith(("python3 -m venv", ". .venv", "pip install"))]
    assert len(install) == 3 and steps[:3] == install
    run = next(s for s in steps if s.startswith("assemble run "))
    assert "--trust" in run.split()
    root, demo, home = tmp_path / "agent-assembler", tmp_path / "demo", tmp_path / "home"
    for folder in COPIED:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    done = subprocess.run(
        ["bash", "-e", "-c", " && ".join(steps[3:]).replace(README_DEMO, str(demo))],
        cwd=root,
        env=_environment(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "math.ceil" in (demo / "examples" / "shipping" / "shipping" / "fees.py").read_text()
    assert "## identity" in done.stdout


def test_the_markers_are_well_formed() -> None:
    if isinstance(MARKED, MarkerError):
        pytest.fail(str(MARKED))
    # the tour's main steps stay covered as the README grows
    for name in ("render", "run-demo", "sessions", "sdk", "testing", "eval"):
        assert name in MARKED.runs, f"no README block is marked `doc-test: {name}`"
    assert {"render", "run-demo"} <= set(MARKED.outputs)


def test_a_marked_block_that_differs_fails_with_a_diff() -> None:
    readme = (
        "<!-- doc-test: hello -->\n```sh\necho hello\n```\n\n"
        "<!-- doc-test: hello output -->\n```text\nhello\n...\nbye ...\n```\n"
    )
    marked = marked_blocks(readme)
    expected = marked.outputs["hello"].code
    assert mismatch(expected, "hello\nbye now") == ""
    assert mismatch(expected, "hello\nthere\nand here\nbye now\nand later") == ""
    assert "+bye?" in mismatch(expected, "hello\nbye?")
    assert "-hello" in mismatch(expected, "hullo\nbye")
    session = "session: 20261130T091903Z-b7f9af.jsonl"
    assert mismatch(session, "session: 20270101T000000Z-0a1b2c.jsonl") == ""
    with pytest.raises(MarkerError, match="no block is marked `doc-test: elsewhere`"):
        marked_blocks("<!-- doc-test: x after elsewhere -->\n```sh\ntrue\n```\n")
    with pytest.raises(MarkerError, match=r"README\.md:1: the line after"):
        marked_blocks("<!-- doc-test: x -->\nprose\n")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_marked_block_runs_as_written(name: str, tmp_path: Path) -> None:
    assert isinstance(MARKED, Marked)
    root, demo, home = tmp_path / "agent-assembler", tmp_path / "demo", tmp_path / "home"
    for folder in COPIED:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    for folder in ("agents", "examples"):  # the copy the README's "Run" section makes
        shutil.copytree(root / folder, demo / folder)
    before = _checkout_state()
    printed = ""
    shown = MARKED.outputs.get(name)
    for block in MARKED.chain(name):
        stdout_only = block.name == name and shown is not None and shown.stdout
        done = _run(block, root, demo, home, stdout_only=stdout_only)
        printed = done.stdout
        where = f"README.md:{block.line}: `doc-test: {block.name}`"
        assert "Traceback" not in printed, f"{where} crashed:\n{printed}"
        assert done.returncode == block.exit, (
            f"{where} exited {done.returncode}, the README expects {block.exit}:\n{printed}"
        )
    assert _checkout_state() == before, "a README block changed the checkout"
    if shown is not None:
        actual = as_the_readme_writes_it(printed, checkout=root, demo=demo, home=home)
        diff = mismatch(shown.code, actual)
        assert not diff, f"README.md:{shown.line}: `{name}` prints something else:\n{diff}"


def _run(
    block: Block, root: Path, demo: Path, home: Path, *, stdout_only: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run one block; its output is stdout and stderr together, as a terminal shows
    them, or stdout alone (stderr then joins it only in a failure message)."""
    code = block.code.replace(README_DEMO, str(demo))
    if block.language == "python":
        script = root / f"readme_{block.name.replace('-', '_')}.py"
        script.write_text(code, "utf-8")
        argv = [sys.executable, script.name]
        if block.pytest:
            argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", script.name]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(
        argv,
        cwd=root,
        env=_environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stdout_only else subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    if stdout_only and (done.returncode != block.exit or "Traceback" in done.stderr):
        done.stdout += done.stderr
    return done


def _environment(home: Path) -> dict[str, str]:
    """A reader's shell without API keys: `assemble` on PATH, the scratch home folder
    (the default data and config folders below it), no colours."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY")
        and not key.startswith(("ASSEMBLER_", "XDG_", "OTEL_"))
        and key not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    scripts = str(Path(sys.executable).parent)
    return kept | {
        "HOME": str(home),
        "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")]),
        "NO_COLOR": "1",
        "TERM": "dumb",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUTF8": "1",
    }


def _checkout_state() -> str:
    """What git sees changed in the checkout (untracked files included)."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else ""
