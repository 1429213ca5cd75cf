"""What `assemble validate` and `render --dry-run` import: only what they use.

Start-up cost is measured in bench/ (issue 12: both within 1.2x of importing their
four libraries); these tests keep the reason it holds from regressing quietly. Each
command runs in a fresh interpreter on the shipping example, and the modules it left
in `sys.modules` are compared with what only a built agent needs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from assembler.cli.main import main
sys.argv[0] = "assemble"
code = 0
try:
    main()
except SystemExit as done:
    code = done.code or 0
for name in sorted(sys.modules):
    print(name)
print(code, file=sys.stderr)
"""

ONLY_A_BUILT_AGENT_NEEDS = (
    "asyncio",
    "jsonschema",  # only to word errors: a valid manifest never needs it
    "openai",
    "anthropic",
    "mcp",
    "assembler.agent.build",
    "assembler.runner",
    # `assembler.providers.endpoints` is standard-library only (validation reads the
    # provider names there); everything that talks to a model is not loaded
    "assembler.providers.registry",
    "assembler.providers._common",
    "assembler.providers.openai_chat",
    "assembler.providers.anthropic_messages",
    "assembler.providers.scripted",
    "assembler.extensions",
    "assembler.memory",
    "assembler.sessions",
    "assembler.tools.python.runtime",
    "assembler.tools.python.call",
    # issue 21, round 2: what describing an agent does not need either
    "assembler.messages",  # the conversation: a replay is checked, not built
    "assembler.agent.options",  # how to build
    "assembler.trust",  # a dry run runs no project code, so asks no trust
    "assembler.tools.builtin.bash_run",  # running the tools, not describing them
    "assembler.tools.builtin.line_reader",
    "assembler.tools.builtin.text_files",
    "assembler.tools.truncate",
    "assembler.pricing",  # only a `cost_usd` budget or a `model.price`
    "difflib",  # only a mistake gets a "did you mean"
)


def _loaded(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stderr.splitlines()[-1] == "0", done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize(
    "command",
    [
        ("validate", "agents/shipping-fixer.yaml"),
        ("render", "--dry-run", "agents/shipping-fixer.yaml"),
    ],
    ids=["validate", "render --dry-run"],
)
def test_a_command_imports_nothing_only_a_built_agent_needs(command: tuple[str, ...]) -> None:
    loaded = _loaded(*command)
    assert "assembler.manifest.schema" in loaded  # the probe saw the command run
    unneeded = sorted(
        m for m in loaded if any(m == n or m.startswith(n + ".") for n in ONLY_A_BUILT_AGENT_NEEDS)
    )
    assert unneeded == []
