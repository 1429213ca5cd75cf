"""Writing what a person will read and edit: YAML with multi-line texts as literal
blocks (`|`), JSON indented; both read back as the same data."""

from __future__ import annotations

import json
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
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
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"
