"""Session recording: every `assemble run` is an append-only JSON-lines file.

The base for the audit trace, resume, fork and compaction; see `store` for the file
format and why it is shaped this way, `codec` for how messages are stored, and
`paths` for where files live, `trace` for the audit trace beside each session.
"""

from __future__ import annotations

from assembler.sessions.codec import (
    message_from_dict,
    message_to_dict,
    usage_from_dict,
    usage_to_dict,
)
from assembler.sessions.paths import default_session_dir
from assembler.sessions.records import Entry, SessionInfo
from assembler.sessions.store import LEAF, Session, SessionStore

__all__ = [
    "LEAF",
    "Entry",
    "Session",
    "SessionInfo",
    "SessionStore",
    "default_session_dir",
    "message_from_dict",
    "message_to_dict",
    "usage_from_dict",
    "usage_to_dict",
]
