"""`assemble doctor`: what this machine can confine, and whether a manifest's sandbox fits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click


@click.command(epilog="\b\nExample:\n  assemble doctor agents/shipping-fixer.yaml")
@click.argument("manifest", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
def doctor(manifest: Path | None, output_format: str) -> None:
    """Report what this machine supports for the sandbox (Landlock ABI, seccomp, user
    namespaces, a private network for `network: allow`, bwrap), and, given a MANIFEST,
    whether its sandbox (and its MCP servers') can be given here (exit 1 if not)."""
    from assembler.sandbox import netns
    from assembler.sandbox.support import probe

    support = probe()
    rows = support.lines()
    private = "not needed here"
    try:
        network = netns.create()
    except OSError as e:
        private = f"no ({e})"
    else:
        network.close()
        private = "yes"
    rows.append(("private network", private + " (for `network: allow`)"))
    problems: list[str] = []
    if manifest is not None:
        problems = _manifest_problems(manifest, support)
    if output_format == "json":
        payload: dict[str, Any] = {name: state for name, state in rows}
        if manifest is not None:
            payload["manifest"] = {"path": str(manifest), "missing": problems}
        click.echo(json.dumps(payload, indent=2))
    else:
        width = max(len(name) for name, _ in rows)
        for name, state in rows:
            click.echo(f"{name.ljust(width)}  {state}")
        if manifest is not None:
            click.echo("")
            if problems:
                click.echo(f"{manifest}: this machine cannot give its sandbox:")
                for problem in problems:
                    click.echo(f"  - {problem}")
            else:
                click.echo(f"{manifest}: this machine can give its sandbox")
    if problems:
        sys.exit(1)


def _manifest_problems(path: Path, support: Any) -> list[str]:
    from assembler.manifest.model import MCPToolSet
    from assembler.validation.load import load_manifest

    manifest = load_manifest(path)
    found = []
    if manifest.sandbox is not None:
        found += [f"the agent's sandbox needs {m}" for m in support.missing(manifest.sandbox)]
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, MCPToolSet) and tool_set.server.sandbox is not None:
            missing = support.missing(tool_set.server.sandbox)
            found += [f"MCP server `{tool_set.server.name}` needs {m}" for m in missing]
    return found
