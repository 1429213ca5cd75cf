"""A small project to evaluate: an agent with the built-in tools and a replayed model,
a workspace of a few files, and helpers that write replay scripts and eval files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

AGENT = """\
version: 1
name: tester
identity: You change files in this folder when asked, and answer briefly.
model: scripted:scripts/default.yaml
workspace: ws
tools:
  sets: [coding]
limits: {max_turns: 6, tool_timeout: 30}
"""


@dataclass
class Project:
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    def script(self, name: str, steps: Sequence[Mapping[str, Any]]) -> str:
        """Write a replay and return its model string, relative to the project root."""
        path = self.root / "scripts" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(list(steps), sort_keys=False))
        return f"scripted:scripts/{name}.yaml"

    def eval_file(self, tasks: Sequence[Mapping[str, Any]], name: str = "t", **top: Any) -> Path:
        data = {"version": 1, "agent": "agent.yaml", **top, "tasks": list(tasks)}
        path = self.root / f"{name}.eval.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def tasks_file(self, lines: Sequence[Mapping[str, Any]], name: str = "tasks.jsonl") -> Path:
        path = self.root / name
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    def tree(self) -> dict[str, bytes]:
        """Every file of the workspace with its bytes, to prove it was never touched."""
        return {
            p.relative_to(self.workspace).as_posix(): p.read_bytes()
            for p in sorted(self.workspace.rglob("*"))
            if p.is_file()
        }


def answer(text: str, **usage: int) -> dict[str, Any]:
    step: dict[str, Any] = {"text": text}
    if usage:
        step["usage"] = usage
    return step


def call(name: str, text: str = "", **arguments: Any) -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": name, "arguments": arguments}]}


def make_project(root: Path) -> Project:
    (root / "ws" / "src").mkdir(parents=True)
    (root / "ws" / "tests").mkdir()
    (root / "ws" / "notes.txt").write_text("the answer is 42\n")
    (root / "ws" / "src" / "app.py").write_text("VALUE = 1\n")
    (root / "ws" / "tests" / "test_app.py").write_text("from src.app import VALUE\n")
    (root / "agent.yaml").write_text(AGENT)
    made = Project(root)
    made.script("default", [answer("Done.")])
    return made
