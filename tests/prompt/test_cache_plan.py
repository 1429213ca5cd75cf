"""`render --format json`'s cache plan: which blocks of the first request can be cached,
where the agent puts breakpoints, and their estimated tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import assemble

from assembler.prompt.cache_plan import cache_plan


def manifest(tmp_path: Path, model: str) -> Path:
    identity = "\n".join(f"  Rule {n}: quote the lines that matter." for n in range(400))
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"version: 1\nname: planner\nidentity: |\n{identity}\nmodel: {model}\n"
        "tools: {sets: [{builtin: [read, grep]}]}\n",
        "utf-8",
    )
    return path


def plan(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, object]:
    result = assemble(capsys, "render", "--dry-run", "--format", "json", str(path))
    assert result.code == 0, result.err
    data = json.loads(result.out)
    return data["cache_plan"]  # type: ignore[no-any-return]


def test_anthropic_marks_tools_system_and_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = plan(capsys, manifest(tmp_path, "{provider: anthropic, name: claude-sonnet-4-5}"))
    assert got["mode"] == "breakpoints"
    blocks = got["blocks"]
    assert isinstance(blocks, list)
    assert [b["block"] for b in blocks] == ["tools", "system", "conversation"]
    assert all(b["breakpoint"] and b["cacheable"] for b in blocks)
    assert blocks[1]["estimated_tokens"] > 3500  # 400 rules of ~37 characters
    assert (
        got["stable_prefix_tokens"] == blocks[0]["estimated_tokens"] + blocks[1]["estimated_tokens"]
    )
    assert got["cached_from_turn_2"] is True


def test_cache_off_and_other_providers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    off = plan(
        capsys, manifest(tmp_path, "{provider: anthropic, name: claude-sonnet-4-5, cache: off}")
    )
    assert off["mode"] == "off" and off["cached_from_turn_2"] is False
    automatic = plan(capsys, manifest(tmp_path, "openai:gpt-4o-mini"))
    assert automatic["mode"] == "automatic" and automatic["cached_from_turn_2"] is True


def test_a_per_turn_section_is_not_cacheable() -> None:
    prompt = "## identity\nStable text.\n\n## memory\n- this turn's memory\n"
    got = cache_plan(prompt, [], "anthropic")
    blocks = got["blocks"]
    assert [(b["block"], b["cacheable"]) for b in blocks] == [
        ("tools", True),
        ("system", True),
        ("system, per turn (memory)", False),
        ("conversation", True),
    ]
    assert blocks[1]["estimated_tokens"] == (len("## identity\nStable text.") + 3) // 4
    assert got["cached_from_turn_2"] is False  # far below the 1,024 tokens a cache needs
