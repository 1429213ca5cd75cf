"""The tool-mention warning's "active:" list holds only tools that are active (issue
12): a misspelled built-in name from the same manifest showed up in it as if it were
a tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from assembler.validation.checks import active_tool_names
from assembler.validation.validator import validate_file


@pytest.mark.parametrize(
    "tools",
    [
        {"sets": ["read", "reed"]},
        {"sets": [{"builtin": ["read", "red"]}]},
        {"sets": [{"builtin": "readonly", "allow": ["read", "raed"]}]},
    ],
)
def test_misspelled_names_are_not_active(tools: dict[str, object]) -> None:
    names, open_ended = active_tool_names({"tools": tools})
    assert "read" in names
    assert not names & {"reed", "red", "raed"}
    assert not open_ended


def test_the_warning_lists_only_active_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text(
        "version: 1\nname: a\nidentity: Use `patch`.\ntools: {sets: [{builtin: [read, red]}]}\n",
        "utf-8",
    )
    warnings = [i.message for i in validate_file(Path("a.yaml")).issues if i.severity == "warning"]
    assert warnings == ["mentions tool `patch`, but no active tool has that name (active: `read`)"]
