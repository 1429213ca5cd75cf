"""`assemble rpc`: drive an agent over JSON lines on stdin/stdout (see assembler.rpc)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from assembler.cli.common import (
    agent_options,
    build_options,
    enter_workspace,
    load,
    loader_flags,
)
from assembler.cli.resume import (
    SessionRequest,
    choose_session,
    session_model,
    session_options,
)

if TYPE_CHECKING:
    from assembler.permissions.policy import PermissionMode


@click.command(
    epilog="\b\nExample:\n"
    """  echo '{"id": 1, "method": "prompt", "params": {"text": "hi"}}' """
    "| assemble rpc agents/team/reviewer.yaml"
)
@click.argument("manifest", type=click.Path(path_type=Path, dir_okay=False))
@session_options
@agent_options
def rpc(
    manifest: Path,
    model: str | None,
    session_dir: Path | None,
    no_session: bool,
    trust: bool,
    continue_: bool,
    resume: str | None,
    fork: str | None,
    permission_mode: PermissionMode,
    **resources: Any,
) -> None:
    """Serve MANIFEST's agent over JSON lines: one request per stdin line,
    `{"id": 1, "method": "prompt", "params": {"text": "..."}}`; events and results on
    stdout. Methods: prompt, cancel, steer, follow_up, state, compact, fork, sessions,
    switch_session, new_session, permission_reply, system_prompt, tools, messages,
    reload, shutdown. `cancel`, `steer`, `follow_up`, `state` and `permission_reply`
    are answered at once; other requests in order. `--resume` needs an ID here.
    """
    from assembler.agent.build import build_agent
    from assembler.protocol_stdio import claim_stdio
    from assembler.rpc import serve
    from assembler.tools.processes import install_exit_handlers

    install_exit_handlers()  # SIGTERM/SIGHUP/exit stop every running tool process
    request = SessionRequest.from_options(continue_, resume, fork)
    # stdin and stdout are the protocol's alone from here on: whatever else writes to
    # descriptor 1 (a print(), a command an extension starts) reaches stderr.
    files = claim_stdio()
    with (
        os.fdopen(files.input, encoding="utf-8") as requests,  # read by descriptor
        os.fdopen(files.output, "w", encoding="utf-8", newline="\n") as replies,
    ):
        flags = loader_flags(resources)
        loaded = load(manifest, flags)
        session_dir = enter_workspace(loaded, session_dir)
        session, fork_entry = choose_session(
            request, loaded, session_dir, record=not no_session, can_ask=False
        )
        model = session_model(model, session, fork_entry)  # the model a `/model` chose
        options = replace(
            build_options(
                flags, model=model, session_dir=session_dir, no_session=no_session, trust=trust
            ),
            session=session,
            fork=fork_entry,
            permission_mode=permission_mode,
        )
        agent = build_agent(loaded, options)
        if permission_mode == "bypass":
            click.secho("permission mode: bypass (every call not denied runs)", err=True)
        asyncio.run(serve(agent, stdin=requests, stdout=replies))
