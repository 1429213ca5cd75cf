"""Writing what a person will read and edit: YAML with multi-line texts as literal
blocks (`|`), JSON with one list item a line; both read back as the same data.

Both are written by C code where it exists (libyaml's emitter, the `json` module's
encoder): a 5,000-entry session converts in well under a second, where the pure
Python emitter alone took seconds (bench/bench_session_tests.py)."""

from __future__ import annotations

import json
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_Base):  # type: ignore[misc]
    """Safe YAML; a text with line breaks as a `|` block, the way a person writes it."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and _blockable(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _blockable(value: str) -> bool:
    """A literal block cannot hold trailing spaces on a line, tabs or control
    characters faithfully; those texts stay quoted."""
    return not any(line != line.rstrip() for line in value.split("\n")) and not any(
        (ord(c) < 32 and c != "\n") or c in "\x7f\u2028\u2029\ufeff" for c in value
    )


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    return text


def dump_json(data: Any) -> str:
    """An object with each key on its own line, and each item of a list value on its
    own line (a step, a prompt, a file): readable, diffable, and encoded in C (an
    `indent` makes `json` use its pure-Python encoder)."""
    if not isinstance(data, dict):
        return json.dumps(data, ensure_ascii=False) + "\n"
    lines = []
    for key, value in data.items():
        head = f" {json.dumps(key, ensure_ascii=False)}: "
        if isinstance(value, list) and value:
            items = ",\n".join(f"  {json.dumps(item, ensure_ascii=False)}" for item in value)
            lines.append(f"{head}[\n{items}\n ]")
        else:
            lines.append(head + json.dumps(value, ensure_ascii=False))
    return "{\n" + ",\n".join(lines) + "\n}\n"
