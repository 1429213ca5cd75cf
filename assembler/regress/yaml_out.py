"""Writing what a person will read and edit: YAML with multi-line texts as literal
blocks (`|`), JSON with one list item a line; both read back as the same data.

Both are written by C code where it exists (libyaml's emitter, the `json` module's
encoder): a 5,000-entry session converts in well under a second, where the pure
Python emitter alone took seconds (bench/bench_session_tests.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

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


BLOCK_STEPS: Final = 300
"""Up to this many script steps are written as block YAML; more, one step a line."""
_NOT_YAML: Final = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")


def dump_steps(steps: Sequence[Any]) -> str:
    """A list (a replay script): block YAML while a person would read it whole, then
    one JSON object a line (JSON is YAML: the `scripted` provider reads either), which
    C encodes at a fraction of the cost. Characters YAML does not allow raw in a
    double-quoted text (DEL, C1 controls, line separators, a BOM) are escaped."""
    if len(steps) <= BLOCK_STEPS:
        return dump_yaml(list(steps))
    return "".join(
        "- " + _NOT_YAML.sub(_escape, json.dumps(step, ensure_ascii=False)) + "\n" for step in steps
    )


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"
