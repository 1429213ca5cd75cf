"""Where an agent's session files live by default: `<data dir>/sessions/<agent>`."""

from __future__ import annotations

from pathlib import Path

from assembler.errors import SessionError
from assembler.user_dirs import default_data_dir


def default_session_dir(agent_name: str) -> Path:
    """`<data dir>/sessions/<agent_name>`: one directory per agent, so listing is cheap."""
    if not agent_name or agent_name in {".", ".."} or "/" in agent_name or "\\" in agent_name:
        raise SessionError(f"the agent name {agent_name!r} cannot be used as a directory name")
    return default_data_dir() / "sessions" / agent_name
