"""`assemble memory`: look at and change an agent's memory store by hand.

The store is plain Markdown files (one per record) in the directory the manifest's
`memory.store` names, so `git diff` shows every change; these commands are the safe
way to make one (validated, atomic, locked against a running agent).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assembler.cli.common import ask_trust, load
from assembler.cli.suggest import SuggestingGroup
from assembler.cli.terminal import for_stdout
from assembler.errors import MemoryStoreError
from assembler.resources.loader import LoaderFlags
from assembler.text import terminal_safe

if TYPE_CHECKING:
    from assembler.manifest.model import Manifest, MemoryPolicy
    from assembler.memory.store import MemoryStore

MANIFEST = click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))


def _policy(manifest: Manifest) -> MemoryPolicy:
    if manifest.memory is None:
        raise MemoryStoreError(f"{manifest.path.name} declares no `memory:` policy")
    return manifest.memory


def _open(manifest_path: Path, *, read_only: bool = False) -> tuple[Manifest, MemoryStore]:
    """The manifest's store; `read_only` for commands that only look (they write no
    index, lock file or directory in the store; a store without an index of its own is
    indexed once in the user's cache, for the next look)."""
    from assembler.memory.store import MemoryStore

    manifest = load(manifest_path, LoaderFlags())
    policy = _policy(manifest)
    store = MemoryStore.open(policy.store, policy, read_only=read_only, keep_index=read_only)
    return manifest, store


@click.group(
    cls=SuggestingGroup, epilog="\b\nExample:\n  assemble memory list agents/everything.yaml"
)
def memory() -> None:
    """List, show, add, remove and consolidate memory records."""


@memory.command("list", epilog="\b\nExample:\n  assemble memory list agents/everything.yaml")
@MANIFEST
def list_(manifest: Path) -> None:
    """List the records: name, type and description."""
    _, store = _open(manifest, read_only=True)
    for note in store.diagnostics:
        click.echo(terminal_safe(f"warning: {note}"), err=True)
    entries = store.catalog()
    if not entries:
        click.echo(terminal_safe(f"no memories in {store.path}"))
    for entry in entries:  # records may be written by a model, or committed by anyone
        click.echo(terminal_safe(f"{entry.name}\t{entry.type}\t{entry.description}"))


@memory.command(epilog="\b\nExample:\n  assemble memory show agents/everything.yaml deploy-window")
@MANIFEST
@click.argument("name")
def show(manifest: Path, name: str) -> None:
    """Print one record as it is stored (control characters shown escaped on a
    terminal)."""
    from assembler.memory.records import to_markdown

    _, store = _open(manifest, read_only=True)
    record = store.get(name)
    if record is None:
        raise MemoryStoreError(f"no memory named `{name}` in {store.path}")
    click.echo(for_stdout(to_markdown(record)), nl=False)


@memory.command(
    epilog="\b\nExample:\n"
    "  assemble memory add agents/everything.yaml --name deploy-window "
    '--description "When deploys may happen" --body "Never on Fridays."'
)
@MANIFEST
@click.option("--name", required=True, help="A slug: lowercase letters, digits, hyphens.")
@click.option("--description", required=True, help="One line: what this memory is about.")
@click.option(
    "--type",
    "kind",
    type=click.Choice(["user", "feedback", "project", "reference"]),
    default="project",
    show_default=True,
)
@click.option("--body", help="The record's text (default: read from stdin).")
@click.option("--replace", is_flag=True, help="Replace a record of the same name.")
def add(
    manifest: Path, name: str, description: str, kind: str, body: str | None, replace: bool
) -> None:
    """Add a record (validated like any other)."""
    from assembler.memory.records import make_record

    loaded, store = _open(manifest)
    text = body if body is not None else sys.stdin.read()
    record = make_record(
        name, description, kind, text, max_body_bytes=_policy(loaded).record_max_bytes
    )
    if replace:
        created = store.upsert(record)
        click.echo(f"{'added' if created else 'replaced'} {name}")
    else:
        store.add(record)
        click.echo(f"added {name}")


@memory.command(
    epilog="\b\nExample:\n  assemble memory remove agents/everything.yaml deploy-window"
)
@MANIFEST
@click.argument("name")
def remove(manifest: Path, name: str) -> None:
    """Remove a record."""
    _, store = _open(manifest)
    if not store.remove(name):
        raise MemoryStoreError(f"no memory named `{name}` in {store.path}")
    click.echo(f"removed {name}")


@memory.command(epilog="\b\nExample:\n  assemble memory consolidate agents/everything.yaml --trust")
@MANIFEST
@click.option("--model", help="Use this model instead of the manifest's: provider:name.")
@click.option("--trust", is_flag=True, help="Trust the manifest's directory for this run.")
def consolidate(manifest: Path, model: str | None, trust: bool) -> None:
    """Ask the model to merge duplicate or conflicting records; the change is
    committed whole or not at all.

    The agent is built as `run` builds it (trust, its model and extensions), so a
    provider an extension registers works here too.

    Example: assemble memory consolidate agents/everything.yaml --model openai:gpt-4o-mini
    """
    from assembler.agent import build_agent

    loaded = load(manifest, LoaderFlags())
    _policy(loaded)

    async def go() -> None:
        agent = build_agent(
            loaded,
            model=model,
            record_session=False,
            trust=True if trust else None,
            ask_trust=ask_trust,
        )
        try:
            memory = agent.memory
            assert memory is not None  # the manifest has a policy, checked above
            result = await memory.consolidate()
        finally:
            await agent.aclose()
        for note in result.diagnostics:
            click.echo(terminal_safe(f"warning: {note}"), err=True)
        if not result.applied:
            raise MemoryStoreError(
                "consolidation changed nothing: the model's answer was not usable"
            )
        click.echo(
            f"consolidated: {len(result.written)} written ({', '.join(result.written) or 'none'}), "
            f"{len(result.deleted)} deleted ({', '.join(result.deleted) or 'none'})"
        )

    asyncio.run(go())
