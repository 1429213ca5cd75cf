"""`serve`: the protocol on the agent's stdin and stdout, the SDK loaded late.

Start-up is what an editor waits for before the user can type (bench/README.md,
issue 27), and most of it used to be the SDK's schema module. So the connection
starts without the SDK: the early phase (`early`) answers `initialize` and
`session/new` by hand, then the SDK is loaded (while the user reads the new session
and types) and its connection takes over the rest of the input (`Inbox.hand_over`)
and the sessions already open. A first request the early phase does not answer
(`session/load`, `session/list`, an editor's own MCP servers, anything unusual) loads
the SDK at once and is handled by it, as before. Nothing here imports the SDK at its
own import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assembler.acp.early import EarlyPhase
from assembler.acp.opening import Builder, log_in_one_line
from assembler.acp.stdio import open_streams
from assembler.extras import requires
from assembler.protocol_stdio import ProtocolFiles

if TYPE_CHECKING:
    from assembler.sessions.store import SessionStore


async def serve(
    build: Builder,
    files: ProtocolFiles,
    *,
    name: str,
    store: SessionStore | None,
    workspace: Path,
) -> None:
    """Serve the protocol on `files` until the editor closes its end; then stop every
    turn and close every agent."""
    log_in_one_line()
    inbox, writer = await open_streams(files)
    early = EarlyPhase(build, name=name, recorded=store is not None, workspace=workspace)
    unanswered: bytes | None = None
    try:
        while not early.opened:
            line = await inbox.next_line()
            if line is None:
                break
            answer = await early.answer(line)
            if answer is None:
                unanswered = line
                break
            writer.write(answer)
            await writer.drain()
        # a broken install is still one line and a non-zero exit, only later
        with requires("acp", "assemble acp"):
            from assembler.acp.sdk_import import import_sdk

            import_sdk()
            from assembler.acp.server import run_server
    except BaseException:
        await early.aclose()
        raise
    reader = inbox.hand_over(unanswered)
    await run_server(
        build, reader, writer, name=name, store=store, workspace=workspace, early=early
    )
