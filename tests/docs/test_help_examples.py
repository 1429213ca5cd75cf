"""Every example in `assemble`'s help names files this repository has.

A command's help ends with examples (its epilog, and `Example:` lines in its text); a
reader tries them from a checkout, so each file or folder they read must exist here.
A file an earlier example of the same help writes (`--out`, `--write`, `>`) counts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from assembler.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
WRITES = ("--out", "--write", "--output", "-o", ">")
PATHLIKE = re.compile(r"^[\w.-]+(/[\w.*-]*)*$")


def commands(group: click.Group, context: click.Context) -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        yield name, command
        if isinstance(command, click.Group):
            for inner, sub in commands(command, click.Context(command, parent=context)):
                yield f"{name} {inner}", sub


def examples(command: click.Command) -> list[str]:
    text = "\n".join(part for part in (command.epilog, command.help) if part)
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip().removeprefix("Example:").strip()
        for part in stripped.split("|"):
            if part.strip().startswith("assemble "):
                lines.append(part.strip())
    return lines


def files_read(example: str, written: set[str]) -> list[str]:
    """The arguments of one example that name a file or folder it reads."""
    words = shlex.split(example, comments=True)
    read: list[str] = []
    for previous, word in zip(["", *words], words, strict=False):
        if previous in WRITES:
            written.add(word)
            continue
        looks_like_a_path = "/" in word or word.endswith((".yaml", ".yml", ".jsonl", ".txt"))
        if looks_like_a_path and PATHLIKE.match(word) and word not in written:
            read.append(word)
    return read


ALL = sorted(commands(cli, click.Context(cli)), key=lambda pair: pair[0])


def test_every_command_has_an_example() -> None:
    missing = [name for name, command in ALL if not examples(command)]
    assert missing == []


@pytest.mark.parametrize(("name", "command"), ALL, ids=[name for name, _ in ALL])
def test_the_examples_name_files_the_repository_has(name: str, command: click.Command) -> None:
    written: set[str] = set()
    missing = [
        (example, path)
        for example in examples(command)
        for path in files_read(example, written)
        if not (REPO / path).exists()
    ]
    assert missing == [], f"`assemble {name} --help` names files the repository lacks"


def test_a_missing_file_is_found() -> None:
    written: set[str] = set()
    assert files_read("assemble render --dry-run --write p.txt agents/a.yaml", written) == [
        "agents/a.yaml"
    ]
    assert files_read("assemble render --check p.txt agents/b.yml", written) == ["agents/b.yml"]
    assert files_read("assemble sessions show 2026 --format md > s.md", written) == []
