"""`assemble rpc`: drive an agent over JSON lines on stdin/stdout (see assembler.rpc)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from assembler.cli.common import agent_options, enter_workspace, load, loader_flags


@click.command(
    epilog="\b\nExample:\n"
    """  echo '{"id": 1, "method": "prompt", "params": {"text": "hi"}}' """
    "| assemble rpc agents/reviewer.yaml"
)
@click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))
@agent_options
def rpc(
    manifest: Path,
    model: str | None,
    session_dir: Path | None,
    no_session: bool,
    trust: bool,
    **resources: Any,
) -> None:
    """Serve MANIFEST's agent over JSON lines: one request per stdin line,
    `{"id": 1, "method": "prompt", "params": {"text": "..."}}`; events and results on
    stdout. Methods: prompt, cancel, system_prompt, tools, messages, reload, shutdown.
    A `cancel` stops the running prompt at once; other requests are answered in order.
    """
    from assembler.agent.build import build_agent
    from assembler.rpc import serve
    from assembler.tools.processes import install_exit_handlers

    install_exit_handlers()  # SIGTERM/SIGHUP/exit stop every running tool process
    flags = loader_flags(resources)
    out = sys.stdout
    # stdout carries the protocol: a stray print() from an extension goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        loaded = load(manifest, flags)
        session_dir = enter_workspace(loaded, session_dir)
        agent = build_agent(
            loaded,
            model=model,
            flags=flags,
            session_dir=session_dir,
            record_session=not no_session,
            trust=True if trust else None,
        )
        asyncio.run(serve(agent, stdout=out))
