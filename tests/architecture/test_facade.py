"""Front ends ask the `Agent` facade, never its parts: code outside `agent/` that reads
`something.runner` is a sign the facade is missing a method (`Agent.state()` serves
the terminal, RPC, ACP and the banner)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "assembler"


def test_no_module_outside_agent_reads_an_agents_runner() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] in ("agent", "runner"):
            continue
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        found += [
            f"{path.relative_to(PACKAGE)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "runner"
        ]
    assert found == []
