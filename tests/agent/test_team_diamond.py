"""Issue 20, item 19: a sub-agent tree is loaded and validated once per manifest file.

A legal diamond: eleven manifests in a row, each delegating to the next through four
tool sets. There are 4^10 paths from the first to the last, and eleven files; loading,
validating, building and walking it must read each file a bounded number of times. A
counting wrapper around the real YAML parse refuses to go on past a generous budget,
so the old exponential walk fails at once instead of running for hours.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble

from assembler.agent.build import build_agent
from assembler.agent.team import load_team
from assembler.testing import ScriptedModel
from assembler.validation import agent_tree, validator
from assembler.validation.load import load_manifest

FILES = 11
BUDGET = 5 * FILES  # parses per operation; the exponential walk needs millions


def diamond(root: Path) -> Path:
    (root / "work").mkdir()
    (root / "r.yaml").write_text("- text: ok\n")
    for level in range(FILES):
        sets = "".join(
            f"    - agent: a{level + 1}.yaml\n      name: {name}{level}\n" for name in "wxyz"
        )
        tools = f"tools:\n  sets:\n{sets}" if level < FILES - 1 else "tools:\n  sets: [readonly]\n"
        (root / f"a{level}.yaml").write_text(
            f"version: 1\nname: a{level}\ndescription: Level {level}.\nidentity: You help.\n"
            "model: scripted:r.yaml\nworkspace: work\nlimits:\n  max_agent_depth: 16\n" + tools
        )
    return root / "a0.yaml"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Every manifest parse, counted; past the budget the walk is stopped."""
    seen: list[Path] = []
    real = validator.parse_manifest

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        seen.append(Path(path))
        if len(seen) > BUDGET:
            raise AssertionError(f"{len(seen)} manifest parses for {FILES} files")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(validator, "parse_manifest", counting)
    monkeypatch.setattr(agent_tree, "parse_manifest", counting)
    yield seen


def test_loading_a_diamond_reads_each_file_once(tmp_path: Path, parses: list[Path]) -> None:
    manifest = load_manifest(diamond(tmp_path))
    assert len(parses) == FILES
    parses.clear()
    team = load_team(manifest)
    assert len(parses) == FILES - 1
    assert [m.manifest.name for m in team.unique()] == [f"a{i}" for i in range(1, FILES)]
    deepest = team.find("/".join(f"z{i}" for i in range(FILES - 1)))
    assert (deepest.manifest.name, deepest.depth) == (f"a{FILES - 1}", FILES - 1)
    assert deepest.path == "a0/" + "/".join(f"z{i}" for i in range(FILES - 1))


def test_validate_and_build_stay_linear(
    tmp_path: Path, parses: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = diamond(tmp_path)
    result = assemble(capsys, "validate", str(path))
    assert result.code == 0, result.out
    assert len(parses) <= 2 * FILES
    parses.clear()
    agent = build_agent(path, provider=ScriptedModel([]), record_session=False)
    assert [s.name for s in agent.subagents] == ["w0", "x0", "y0", "z0"]
    assert len(parses) <= 2 * FILES
