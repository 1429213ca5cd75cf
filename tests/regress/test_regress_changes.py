"""One change at a time to the agent a session was recorded with, and the replay names
it: the section, tool schema, setting, call or file that moved, in the FIRST
divergence. The session is recorded and converted once per worker; each change is
made to the project, replayed in strict mode, and undone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from regress_project import (
    failure,
    git,
    make_project,
    record,
    replay_one,
    restore_workspace,
    to_test,
)

from assembler.memory.records import make_record
from assembler.memory.store import MemoryStore

Change = Callable[[Path], None]


def edit(relative: str, old: str, new: str) -> Change:
    def change(root: Path) -> None:
        path = root / relative
        text = path.read_text("utf-8")
        assert old in text, f"{old!r} is not in {relative}"
        path.write_text(text.replace(old, new, 1), "utf-8")

    return change


def manifest(old: str, new: str) -> Change:
    return edit("agents/fixer.yaml", old, new)


def write(relative: str, content: str) -> Change:
    def change(root: Path) -> None:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, "utf-8")

    return change


def start_change(root: Path, change: Change) -> None:
    """The recorded workspace itself changed: `change` made in a new commit, and the
    start file moved to it (as a test whose workspace was brought up to date)."""
    (start,) = (root / "evals" / "fix.replay").glob("*.start.json")
    recorded = json.loads(start.read_text("utf-8"))["commit"]
    change(root)
    git(root, "add", "-A", "examples")
    git(root, "commit", "-qm", "a workspace change")
    commit = git(root, "rev-parse", "HEAD").strip()
    start.write_text(start.read_text("utf-8").replace(recorded, commit), "utf-8")


def start_file(
    root: Path, old: str, new: str, relative: str = "examples/shipping/shipping/fees.py"
) -> None:
    start_change(root, edit(relative, old, new))


def extension(name: str, source: str) -> Change:
    """An extension file, and the manifest loading it first."""

    def change(root: Path) -> None:
        write(f"agents/extensions/{name}.py", source)(root)
        manifest("extensions:\n", f"extensions:\n  - path: extensions/{name}.py\n")(root)

    return change


def memory_record(root: Path) -> None:
    def add(root: Path) -> None:
        store = MemoryStore.open(root / "examples" / "shipping" / ".assembler" / "memory")
        try:
            store.add(make_record("fee-rounding", "How fees round", "project", "Fees round up."))
        finally:
            store.close()

    start_change(root, add)


REWRITER = """\
from assembler.extensions import ResultPatch


def setup(api, options):
    @api.on("tool_result")
    def shorten(event):
        if event.name == "read":
            return ResultPatch(content=event.result.content.upper())
        return None
"""

BLOCKER = """\
from assembler.extensions import Block


def setup(api, options):
    @api.on("tool_call")
    def no_bash(event):
        return Block("no shell today") if event.name == "bash" else None
"""

SKILL = """\
---
name: release-notes
description: How release notes are written here.
---
Write one line per change.
"""

CHANGES: dict[str, tuple[Change, str]] = {
    "identity text": (
        manifest("You are a careful maintainer", "You are a hasty maintainer"),
        "turn 1: section `identity` changed: - `You are a careful maintainer",
    ),
    "a context value": (
        manifest("currency: EUR", "currency: USD"),
        'turn 1: section `identity` changed: - `context: {"currency":"EUR"',
    ),
    "a context key added": (
        manifest("  currency: EUR\n", "  currency: EUR\n  region: EU\n"),
        "turn 1: section `identity` changed",
    ),
    "a tool added": (
        manifest("allow: [read, edit, bash]", "allow: [read, edit, bash, write]"),
        "turn 1: section `tools` changed: + `- write:",
    ),
    "a tool removed": (
        manifest("allow: [read, edit, bash]", "allow: [read, bash]"),
        "turn 1: section `tools` changed: - `- edit:",
    ),
    "a tool renamed": (
        manifest(
            "- function: shop_tools:quote_fee",
            "- function: shop_tools:quote_fee\n          name: fee",
        ),
        "turn 1: section `tools` changed: - `- quote_fee:",
    ),
    "a tool's description": (
        manifest(
            "- function: shop_tools:quote_fee",
            "- function: shop_tools:quote_fee\n          description: Quote a fee.\n"
            "          snippet: Quote the shipping fee of a parcel.",
        ),
        "turn 1: tool schema `quote_fee` changed: description",
    ),
    "a tool's parameters": (
        manifest(
            "- function: shop_tools:quote_fee",
            "- function: shop_tools:quote_fee\n          parameters:\n            type: object\n"
            "            properties: {weight_kg: {type: number}}",
        ),
        "turn 1: tool schema `quote_fee` changed: parameters",
    ),
    "a guideline": (
        manifest("Never change files under", "Do not change files under"),
        "turn 1: section `tools` changed: - `- Never change files under",
    ),
    "a skill added": (
        write("extra-skills/release-notes/SKILL.md", SKILL),
        "turn 1: section `skills` changed: + `- **release-notes**",
    ),
    "a skill's description": (
        lambda root: start_file(
            root,
            "How bugs are fixed",
            "How defects are fixed",
            "examples/shipping/skills/fix-workflow/SKILL.md",
        ),
        "turn 1: section `skills` changed: - `- **fix-workflow**: How bugs are fixed",
    ),
    "a memory record": (memory_record, "turn 1: section `memory` added: + `<relevant_memories>`"),
    "a template override": (
        manifest(
            "limits:",
            "prompt:\n  skills:\n    template: '{% for s in skills %}* {{ s.name }}\n{% endfor %}'\n"
            "limits:",
        ),
        "turn 1: section `skills` changed: - `Read a skill's file before you follow it.`",
    ),
    "an extension that rewrites results": (
        extension("shout", REWRITER),
        "turn 3: tool `read` result differs (workspace file `shipping/fees.py`): "
        '- `"""Shipping fees for parcels, in euro cents."""`',
    ),
    "an extension that blocks a call": (
        extension("no_bash", BLOCKER),
        "turn 2: extension `no_bash` now blocks call 1 (`bash`)",
    ),
    "an extension's options": (
        manifest('patterns: ["tests/*"]', 'patterns: ["nothing/*"]'),
        "turn 4: call 3 (`edit`) is no longer blocked",
    ),
    "a permission rule": (
        manifest("limits:", "permissions:\n  deny: ['edit(shipping/**)']\nlimits:"),
        "turn 5: permission rule `edit(shipping/**)` now blocks call 4",
    ),
    "a workspace file": (
        lambda root: start_file(root, "BASE_FEE_CENTS = 499", "BASE_FEE_CENTS = 499  # base"),
        "turn 3: tool `read` result differs (workspace file `shipping/fees.py`): "
        "- `BASE_FEE_CENTS = 499` + `BASE_FEE_CENTS = 499  # base`",
    ),
    "a context file": (
        lambda root: start_file(
            root, "Shipping fees", "Parcel fees", "examples/shipping/AGENTS.md"
        ),
        "turn 1: section `workspace` changed: - `Shipping fees for the shop, in euro cents.`",
    ),
    "the model's tool_choice": (
        manifest("  temperature: 0.2\n", "  temperature: 0.2\n  tool_choice: required\n"),
        "turn 1: model setting `tool_choice` changed: `none` → `required`",
    ),
    "the model's temperature": (
        manifest("temperature: 0.2", "temperature: 0.7"),
        "turn 1: model setting `temperature` changed: `0.2` → `0.7`",
    ),
    "the model's max_tokens": (
        manifest("  temperature: 0.2\n", "  temperature: 0.2\n  max_tokens: 512\n"),
        "turn 1: model setting `max_tokens` changed: `none` → `512`",
    ),
}


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project with the fixer's session converted to `evals/fix.eval.yaml`."""
    root = make_project(tmp_path_factory.mktemp("changes") / "project")
    session = record(root)
    restore_workspace(root)
    to_test(session, root / "evals" / "fix.eval.yaml")
    git(root, "add", "-A", "evals")
    git(root, "commit", "-qm", "the test")
    yield root


def test_the_unchanged_agent_replays_as_recorded(converted: Path) -> None:
    run = replay_one(converted / "evals" / "fix.eval.yaml")
    assert run.status == "passed", failure(run)
    assert failure(run) == "6 replies, every request as recorded"


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_change_is_located_in_the_first_divergence(converted: Path, name: str) -> None:
    change, expected = CHANGES[name]
    head = git(converted, "rev-parse", "HEAD").strip()
    try:
        change(converted)
        run = replay_one(converted / "evals" / "fix.eval.yaml")
    finally:
        git(converted, "reset", "-q", "--hard", head)
        git(converted, "clean", "-qfdx", "--", "agents", "extra-skills", "examples")
    assert run.status == "failed"
    assert failure(run).startswith(expected), failure(run)
