"""The core install, for real: `pip install <this repository>` without extras into a
fresh virtual environment, then `validate`, `render --dry-run`, `init` and a scripted
`run` there, and the one-line message for every extra that is missing.

Slow (a venv and a wheel build, about half a minute), so marked; CI runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL_MODULES = (
    "openai", "anthropic", "httpx2", "mcp", "mcp_types", "anyio",
    "opentelemetry", "dask", "distributed", "acp",
)  # fmt: skip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv holding agent-assembler and its core dependencies only."""
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # This environment's pip installs into the new one (no pip inside it to set up).
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
         "--disable-pip-version-check", str(ROOT)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    yield venv


def assemble(
    venv: Path, *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [str(venv / "bin" / "assemble"), *argv],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_core_install_has_no_optional_package(core: Path) -> None:
    probe = (
        "import importlib.util, sys\n"
        f"found = [m for m in {OPTIONAL_MODULES!r} if importlib.util.find_spec(m)]\n"
        "print(','.join(found))\n"
    )
    done = subprocess.run(
        [str(core / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


def test_validate_render_and_a_scripted_run_work_with_the_core_only(
    core: Path, shipping: Path
) -> None:
    validated = assemble(core, "validate", "agents/", cwd=shipping)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    for manifest in ("agents/shipping-fixer.yaml", "agents/everything.yaml"):
        rendered = assemble(core, "render", "--dry-run", manifest, cwd=shipping)
        assert rendered.returncode == 0, rendered.stderr
        assert rendered.stdout.startswith("## identity\n")
    ran = assemble(
        core, "run", "--trust", "agents/shipping-fixer.yaml", "-p", "Fix the failing test.",
        cwd=shipping,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "All 4 tests pass" in ran.stdout
    assert "math.ceil" in (shipping / "examples" / "shipping" / "shipping" / "fees.py").read_text()


def test_init_works_with_the_core_only(core: Path, tmp_path: Path) -> None:
    assert assemble(core, "init", "starter", "--template", "coding", cwd=tmp_path).returncode == 0
    validated = assemble(core, "validate", "starter/agent.yaml", cwd=tmp_path)
    assert validated.stdout == "1 manifest valid\n"
    ran = assemble(
        core, "run", "starter/agent.yaml", "--no-session", "--trust", "-p", "Tests?", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert "AGENTS.md" in ran.stdout


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            "openai:gpt-4o",
            "openai:gpt-4o needs the OpenAI SDK: pip install 'agent-assembler[openai]'",
        ),
        (
            "ollama:qwen2.5:7b",
            "ollama:qwen2.5:7b needs the OpenAI SDK: pip install 'agent-assembler[openai]'",
        ),
        (
            "anthropic:claude-sonnet-4-5",
            "anthropic:claude-sonnet-4-5 needs the Anthropic SDK: "
            "pip install 'agent-assembler[anthropic]'",
        ),
    ],
)
def test_a_missing_provider_sdk_is_one_line(
    core: Path, shipping: Path, model: str, message: str
) -> None:
    ran = assemble(
        core, "run", "--trust", "--model", model, "agents/shipping-fixer.yaml", "-p", "hi",
        cwd=shipping,
    )  # fmt: skip
    assert (ran.returncode, ran.stderr) == (1, f"error: {message}\n")


def test_a_manifest_naming_an_openai_model_names_the_openai_extra(
    core: Path, tmp_path: Path
) -> None:
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: helper\nidentity: You help.\nmodel: openai:gpt-4o-mini\n"
    )
    assert assemble(core, "validate", "agent.yaml", cwd=tmp_path).returncode == 0
    assert assemble(core, "render", "--dry-run", "agent.yaml", cwd=tmp_path).returncode == 0
    ran = assemble(core, "run", "agent.yaml", "-p", "hi", cwd=tmp_path)
    assert (ran.returncode, ran.stderr) == (
        1,
        "error: openai:gpt-4o-mini needs the OpenAI SDK: pip install 'agent-assembler[openai]'\n",
    )


def test_a_manifest_with_an_mcp_server_names_the_mcp_extra(core: Path, tmp_path: Path) -> None:
    (tmp_path / "replies.yaml").write_text("- text: hello\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: clock\nidentity: You tell the time.\nmodel: scripted:replies.yaml\n"
        "tools:\n  sets:\n    - mcp: time\n  servers:\n    time:\n      command: python3\n"
    )
    assert assemble(core, "validate", "agent.yaml", cwd=tmp_path).returncode == 0
    ran = assemble(core, "run", "--trust", "agent.yaml", "-p", "hi", cwd=tmp_path)
    assert (ran.returncode, ran.stderr) == (
        1,
        "error: MCP server `time` needs the MCP SDK: pip install 'agent-assembler[mcp]'\n",
    )


def test_assemble_acp_names_the_acp_extra(core: Path, shipping: Path) -> None:
    ran = assemble(core, "acp", "--trust", "agents/shipping-fixer.yaml", cwd=shipping)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr == (
        "error: assemble acp needs the Agent Client Protocol SDK: "
        "pip install 'agent-assembler[acp]'\n"
    )


def test_view_and_report_need_no_extra(core: Path, tmp_path: Path) -> None:
    """`assemble report` runs and the view's server imports on the core install."""
    results = tmp_path / "results.jsonl"
    results.write_text(
        '{"eval": "e", "task": "fix", "repeat": 1, "status": "passed", "duration_s": 0.5}\n'
    )
    done = assemble(core, "report", "results.jsonl", "-o", "report.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1/1" in (tmp_path / "report.html").read_text()
    imported = subprocess.run(
        [str(core / "bin" / "python"), "-c", "import assembler.view.server"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
