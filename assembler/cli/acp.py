"""`assemble acp`: serve an agent to an editor over the Agent Client Protocol (see
assembler.acp)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from assembler.permissions.policy import PermissionMode

from assembler.cli.common import (
    agent_options,
    build_options,
    enter_workspace,
    load,
    loader_flags,
)
from assembler.permissions.policy import PERMISSION_MODES


@click.command(epilog="\b\nExample:\n  assemble acp agents/shipping-fixer.yaml --trust")
@click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))
@agent_options
@click.option(
    "--permission-mode",
    type=click.Choice(PERMISSION_MODES),
    default="default",
    show_default=True,
    help="Each session's first mode (the editor switches it): what an `ask` rule becomes.",
)
def acp(
    manifest: Path,
    model: str | None,
    session_dir: Path | None,
    no_session: bool,
    trust: bool,
    permission_mode: PermissionMode,
    **resources: Any,
) -> None:
    """Serve MANIFEST's agent over the Agent Client Protocol (JSON-RPC on stdin and
    stdout), as Zed and JetBrains IDEs start agents. Each editor thread is a new
    session (a session file); the editor lists, loads, resumes and closes them, and
    switches the permission mode of each. Project code runs
    only in a trusted directory: the editor cannot ask, so trust it first (`assemble
    trust add DIR`) or pass --trust. Logs go to stderr.
    """
    from assembler.extras import require
    from assembler.protocol_stdio import claim_stdio

    require("acp", "assemble acp")  # before anything is read: the one-line message
    from assembler.acp.start import serve  # the SDK is loaded once a session is open
    from assembler.agent.agent import Agent
    from assembler.agent.build import build_agent
    from assembler.sessions.store import SessionStore
    from assembler.tools.processes import install_exit_handlers

    install_exit_handlers()  # SIGTERM/SIGHUP/exit stop every running tool process
    files = claim_stdio()  # stdout is the protocol's alone from here on
    flags = loader_flags(resources)
    loaded = load(manifest, flags)
    session_dir = enter_workspace(loaded, session_dir)

    options = build_options(
        flags, model=model, session_dir=session_dir, no_session=no_session, trust=trust
    )
    options = replace(options, permission_mode=permission_mode)
    store = None if no_session else SessionStore.for_agent(loaded.name, session_dir)

    def build(session: str | None, fork: str | None = None) -> Agent:
        return build_agent(loaded, replace(options, session=session, fork=fork))

    workspace = loaded.workspace.resolve()
    asyncio.run(serve(build, files, name=loaded.name, store=store, workspace=workspace))
