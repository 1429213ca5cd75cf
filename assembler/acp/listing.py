"""`session/list`: the sessions an editor can offer to resume, a page at a time.

They are this agent's sessions in this workspace (the ones `--continue` would
consider), the most recently written first: the sessions a sub-agent ran are its
parent's business and are left out. The `cwd` an editor filters by does not narrow
the list, for the reason `session/new` ignores it: the manifest's workspace is where
the agent works, whatever folder the editor has open, so its sessions are all "here".

Only the headers of all sessions are read to filter and order them; the sessions of
the page asked for are then summarised (a title from the first message, the time of
the last entry). The cursor is the position of the next page, opaque to the editor.
"""

from __future__ import annotations

from pathlib import Path

from acp import RequestError
from acp.schema import ListSessionsResponse, SessionInfo

from assembler.sessions.catalog import summarise
from assembler.sessions.store import SessionStore
from assembler.text import one_line

PAGE_SIZE = 50
TITLE_LIMIT = 80


def session_page(
    store: SessionStore, *, agent: str, workspace: Path, cursor: str | None
) -> ListSessionsResponse:
    """The page of sessions starting at `cursor` (the first page without one)."""
    start = _position(cursor)
    here = str(workspace)
    infos = [
        info
        for info in store.list()
        if info.agent == agent
        and info.header.get("workspace") in (here, None)
        and "delegated_from" not in info.header
    ]
    page = infos[start : start + PAGE_SIZE]
    sessions = []
    for info in page:
        summary = summarise(info)
        title = one_line(summary.first_message, TITLE_LIMIT) if summary.first_message else None
        sessions.append(
            SessionInfo(
                session_id=summary.id,
                cwd=summary.workspace or here,
                title=title,
                updated_at=summary.last_activity or None,
            )
        )
    following = start + PAGE_SIZE
    return ListSessionsResponse(
        sessions=sessions, next_cursor=str(following) if following < len(infos) else None
    )


def _position(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise RequestError(-32602, f"{cursor!r} is not a cursor this agent gave")
    return int(cursor)
