"""`assemble render`: the exact system prompt of the first request, and the tools.

No other agent tool prints the final assembled prompt; this one does, byte for byte,
so a prompt change can be reviewed in a pull request like code (`--write` a snapshot,
`--check` it in CI).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from assembler.cli.common import (
    ask_trust,
    echo_new_issues,
    load_reporting,
    loader_flags,
    manifest_argument,
    resource_options,
)
from assembler.cli.params import given_params, param_options
from assembler.cli.terminal import for_stdout
from assembler.errors import RenderError
from assembler.text import terminal_safe

if TYPE_CHECKING:
    from assembler.agent.preview import Preview
    from assembler.manifest.model import Manifest

WORKSPACE_PLACEHOLDER = "{workspace}"


@click.command(
    epilog="\b\nExample:\n  assemble render --dry-run agents/shipping-fixer.yaml\n"
    "  assemble render --dry-run --write prompt.txt agents/shipping-fixer.yaml\n"
    "  assemble render --dry-run --check prompt.txt agents/shipping-fixer.yaml"
)
@click.argument("manifest", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--dry-run",
    is_flag=True,
    help="No side effects: imports no project code, starts no process, opens no socket, writes nothing.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option(
    "--prompt-only", is_flag=True, help="Print the system prompt only, without the tool summary."
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a dry run cannot know everything (extensions, MCP servers).",
)
@click.option(
    "--check",
    "check_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Compare with a committed snapshot; exit 1 with a diff on drift.",
)
@click.option(
    "--write",
    "write_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the output as a snapshot for --check.",
)
@click.option(
    "--input", "user_input", help="A user message: shows which memories would be selected for it."
)
@click.option(
    "--trust", is_flag=True, help="Trust the manifest's directory for this run (without --dry-run)."
)
@click.option(
    "--model",
    help="Render the agent as `run --model` builds it: provider:name (checked; without "
    "--dry-run the model is created, and asked only for a `model` memory selection).",
)
@click.option(
    "--agent",
    "agent_path",
    metavar="PATH",
    help="Show this sub-agent instead, as a delegation builds it: tool names from "
    "MANIFEST down (`reviewer`, `reviewer/helper`).",
)
@param_options
@resource_options
def render(
    manifest: Path | None,
    dry_run: bool,
    output_format: str,
    prompt_only: bool,
    strict: bool,
    check_file: Path | None,
    write_file: Path | None,
    user_input: str | None,
    trust: bool,
    model: str | None,
    agent_path: str | None,
    param_pairs: tuple[str, ...],
    params_file: str | None,
    **resources: Any,
) -> None:
    """Show the exact system prompt and tool schemas of MANIFEST's first request
    (default: ./agent.yaml). Exit 1 when an MCP server failed to start (the prompt is
    still shown), or with --strict when a dry run cannot know everything.

    An agent with `parameters` renders with the values of --param/--params (sample
    values, said on stderr, for required ones not given), and the first user message
    its `task` makes is shown after the tools.

    Example: assemble render --dry-run --agent reviewer agents/team/lead.yaml
    """
    import os
    from dataclasses import replace

    from assembler.agent.preview import preview_dry_run, preview_live
    from assembler.agent.team import load_team

    manifest = manifest_argument(manifest)
    if write_file is not None and check_file is not None:
        raise click.UsageError("--write and --check exclude each other")
    if prompt_only and output_format == "json":  # JSON has the prompt under "prompt"
        raise click.UsageError("--prompt-only prints the prompt as text: leave out --format json")
    flags = loader_flags(resources)
    # a dry run needs no secrets: an unset ${VAR} is a warning, as in `validate`
    unset = "warning" if dry_run else "error"
    shown = load_reporting(manifest, flags, unset_variables=unset)
    team = load_team(shown.manifest, env=os.environ, unset_variables=unset)
    if agent_path:  # as its parent builds it: `--skill` is for the named agent only
        team = team.find(agent_path)
        flags = replace(flags, explicit_skills=())
    loaded = team.manifest
    if model is not None:  # a mistake here is one `run --model` would make: said now
        # imported here: the providers' registry is start-up cost a dry run without
        # --model does not pay
        from assembler.agent.model_choice import check_model

        check_model(loaded, model)
    params = _render_params(loaded, param_pairs, params_file)
    if dry_run:
        preview = preview_dry_run(loaded, flags, user_input=user_input, team=team, params=params)
    else:
        import asyncio  # only the live preview runs an event loop; a dry run stays lean

        preview = asyncio.run(
            preview_live(
                loaded,
                flags,
                trust=True if trust else None,
                ask_trust=ask_trust,
                user_input=user_input,
                team=team,
                model=model,
                params=params,
            )
        )
    echo_new_issues(preview.diagnostics, shown.issues, manifest)  # validation printed some
    for unknown in preview.unknowns:
        click.echo(terminal_safe(f"dry run: {unknown}"), err=True)
    for note in preview.notes:
        click.echo(terminal_safe(note), err=True)
    workspace = str(loaded.workspace.resolve())
    snapshot = write_file is not None or check_file is not None
    output = (
        _json(preview, workspace, portable=snapshot, model=_model_of(loaded, model))
        if output_format == "json"
        else _text(preview, prompt_only)
    )
    # a snapshot file is a text file: it ends with a newline (as it always did)
    file_text = output if output.endswith("\n") else output + "\n"
    if write_file is not None:
        try:
            write_file.parent.mkdir(parents=True, exist_ok=True)
            write_file.write_text(_portable(file_text, workspace), "utf-8")
        except OSError as e:
            raise RenderError(f"cannot write the snapshot {write_file}: {e.strerror or e}") from e
        click.echo(f"wrote {write_file}", err=True)
    elif check_file is not None:
        _check(check_file, _portable(file_text, workspace))
    else:
        shown_output = for_stdout(output, json_text=output_format == "json")
        # `--prompt-only` into a pipe is the prompt's bytes exactly (`| sha256sum` gives
        # the JSON's `sha256`); a person at a terminal gets the line ended
        ended = output.endswith("\n") or (prompt_only and not _is_terminal())
        click.echo(shown_output, nl=not ended)
    if preview.failures or (strict and preview.unknowns):
        sys.exit(1)


def _render_params(
    manifest: Manifest, pairs: tuple[str, ...], file: str | None
) -> dict[str, Any] | None:
    """The values given, checked (one error listing every problem); with none given,
    the defaults, and a sample value (said on stderr) for each required parameter, so a
    prompt can be reviewed without inventing values."""
    if pairs or file is not None or not manifest.parameters:
        return given_params(manifest, pairs, file)
    from assembler.typed.samples import sample_value

    missing = [p for p in manifest.parameters if p.required]
    if missing:
        names = ", ".join(f"`{p.name}`" for p in missing)
        click.echo(f"render: no value given for {names}; rendered with sample values", err=True)
    return {p.name: sample_value(p.schema) for p in missing}


def _text(preview: Preview, prompt_only: bool) -> str:
    prompt = preview.rendered.text
    if prompt_only:  # byte for byte: `| sha256sum` is the JSON output's `sha256`
        return prompt
    lines = [prompt, "", f"---- tool schemas ({len(preview.tools)}) ----"]
    for tool in preview.tools:
        lines.append(f"{tool.name}({_signature(tool.parameters)})  [{tool.source}]")
        first = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        if first:
            lines.append(f"    {first}")
    if preview.memory:
        lines.append("")
        lines.append(f"---- selected memories ({len(preview.memory)}) ----")
        lines.extend(preview.memory)
    if preview.sandbox.get("declared"):
        lines.extend(["", "---- sandbox ----", *_sandbox_lines(preview.sandbox)])
    if preview.output is not None:
        lines += ["", "---- output schema ----", json.dumps(preview.output, ensure_ascii=False)]
    if preview.first_message is not None:
        lines += ["", "---- first user message (task) ----", preview.first_message.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _sandbox_lines(shown: Mapping[str, Any]) -> list[str]:
    """The effective sandbox, one line per part, each server's own below it."""
    lines = [f"filesystem: {shown['filesystem']}", f"network: {shown['network']}"]
    for key in ("writable", "hidden", "allow_hosts", "unconfined"):
        if shown.get(key):
            lines.append(f"{key}: " + ", ".join(str(v) for v in shown[key]))
    for name, server in dict(shown.get("servers", {})).items():
        lines.append(
            f"server {name}: filesystem {server['filesystem']}, network {server['network']}"
        )
    return lines


def _is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _signature(schema: Any) -> str:
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = set(schema.get("required", ())) if isinstance(schema, dict) else set()
    parts = []
    for name, spec in properties.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        kind = "|".join(kind) if isinstance(kind, list) else kind
        parts.append(f"{name}{'' if name in required else '?'}: {kind}")
    return ", ".join(parts)


def _model_of(manifest: Manifest, override: str | None) -> tuple[str | None, bool]:
    """The provider the first request goes to (None: the user's default, not known
    here) and whether `model.cache` is on."""
    spec = manifest.model
    cache = spec.cache if spec is not None else True
    if override is not None:
        return override.partition(":")[0], cache
    return (spec.provider if spec is not None else None), cache


def _json(
    preview: Preview,
    workspace: str,
    *,
    portable: bool = False,
    model: tuple[str | None, bool] = (None, True),
) -> str:
    """With `portable` (a snapshot), texts hold `{workspace}` before they are hashed and
    counted, so the snapshot's hash matches its own prompt on every checkout. `model`:
    the provider and `model.cache`, for the cache plan."""
    import hashlib

    from assembler.prompt.cache_plan import cache_plan

    def shown(text: str) -> str:
        return _portable(text, workspace) if portable else text

    rendered = preview.rendered
    prompt = shown(rendered.text)
    sources = _section_sources(preview, workspace)
    payload = {
        "sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        "characters": len(prompt),
        "estimated_tokens": estimate_tokens(prompt),
        "sections": [
            {
                "name": section.name,
                "template": section.template,
                "sources": sources.get(section.name, []),
                "estimated_tokens": estimate_tokens(shown(section.text)),
                "text": shown(section.text),
            }
            for section in rendered.sections
        ],
        "prompt": prompt,
        "tools": [
            {
                "name": tool.name,
                "source": tool.source,
                "description": tool.description,
                "parameters": tool.parameters,
            }
            for tool in preview.tools
        ],
        "selected_memories": list(preview.memory),
        "permissions": dict(preview.permissions),
        "sandbox": {k: v for k, v in preview.sandbox.items() if k != "declared"},
        "unknown": list(preview.unknowns),
        "diagnostics": [issue.format() for issue in preview.diagnostics],
        **({"parameters": dict(preview.parameters)} if preview.parameters is not None else {}),
        **({"output": preview.output} if preview.output is not None else {}),
        **({"first_message": shown(preview.first_message)} if preview.first_message else {}),
        "cache_plan": cache_plan(
            prompt,
            ((tool.name, tool.description, tool.parameters) for tool in preview.tools),
            *model,
        ),
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def _section_sources(preview: Preview, workspace: str) -> dict[str, list[str]]:
    snapshot = preview.snapshot
    return {
        "identity": ["manifest: identity", "manifest: context"],
        "tools": [f"{tool.source}: {tool.name}" for tool in preview.tools],
        "workspace": [f"workspace: {workspace}"] + [f.source for f in snapshot.context_files],
        "skills": [str(skill.path) for skill in snapshot.skills],
        "memory": [f"memory: {name}" for name in preview.memory],
    }


def estimate_tokens(text: str) -> int:
    """About four characters per token: a stable estimate without a tokenizer."""
    return (len(text) + 3) // 4


def _portable(output: str, workspace: str) -> str:
    """Snapshots replace the absolute workspace path, which differs per checkout.

    Only whole occurrences: the path followed by a separator, a quote, whitespace or
    the end, so `/work/ws` does not rewrite part of `/work/ws-old`, and a workspace
    of `/` is left alone.
    """
    if workspace in ("", "/"):
        return output
    import re

    pattern = re.escape(workspace) + r"(?=[/\s\"'`),:]|$)"
    return re.sub(pattern, WORKSPACE_PLACEHOLDER, output, flags=re.M)


def _check(snapshot_file: Path, output: str) -> None:
    try:
        expected = snapshot_file.read_text("utf-8")
    except FileNotFoundError:
        click.echo(f"no snapshot at {snapshot_file}; create it with --write", err=True)
        sys.exit(1)
    except (OSError, UnicodeDecodeError) as e:
        raise RenderError(f"cannot read the snapshot {snapshot_file}: {e}") from e
    if expected == output:
        click.echo(f"{snapshot_file}: prompt unchanged", err=True)
        return
    import difflib

    diff = difflib.unified_diff(
        expected.splitlines(keepends=True),
        output.splitlines(keepends=True),
        fromfile=str(snapshot_file),
        tofile="rendered now",
    )
    sys.stdout.write(for_stdout("".join(diff)))
    click.echo(
        f"{snapshot_file}: the rendered prompt drifted from the snapshot; if the change is "
        f"intended, rerun with --write {snapshot_file} and commit the result",
        err=True,
    )
    sys.exit(1)
