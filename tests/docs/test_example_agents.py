"""`agents/everything.yaml` shows every manifest field, and `agents/minimal.yaml` runs.

The README points at both: one for "every field once", one for "the least a manifest
needs". A field the schema gains must appear in `everything.yaml`, as a key or, where
it is an alternative to one shown (`module:` beside `path:`), as a commented key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "assembler" / "schemas" / "agent.schema.json"


def property_names(node: Any) -> Iterator[str]:
    """Every property name anywhere in the schema (its `$defs` included)."""
    if isinstance(node, dict):
        for name, value in node.get("properties", {}).items():
            yield name
            yield from property_names(value)
        for key, value in node.items():
            if key != "properties":
                yield from property_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from property_names(item)


def test_everything_yaml_shows_every_field() -> None:
    text = (REPO / "agents" / "everything.yaml").read_text("utf-8")
    shown = set(re.findall(r"^[ \t]*(?:#[ \t]*)?(?:-[ \t]+)?([A-Za-z_]+):", text, re.MULTILINE))
    shown |= set(re.findall(r"[{,][ \t]*([A-Za-z_]+):", text))  # flow mappings
    names = set(property_names(json.loads(SCHEMA.read_text("utf-8"))))
    assert sorted(names - shown) == []


def test_minimal_yaml_runs_offline(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = assemble(
        capsys, "run", str(shipping / "agents" / "minimal.yaml"), "--no-session", "-p", "Hi."
    )
    assert ran.code == 0, ran.err
    assert "This is a replay." in ran.out
