"""The permission modes as ACP session modes.

An editor shows a session's modes in a picker and switches with `session/set_mode`;
the agent answers with a `current_mode_update`, so every view of the session (the
editor may show it twice) follows. The modes are the permission modes of
`assemble run --permission-mode`: they change what an `ask` becomes, never a
`deny` (a deny rule of the manifest holds in every mode).
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import CurrentModeUpdate, SessionMode, SessionModeState

from assembler.acp import answers
from assembler.permissions.policy import PERMISSION_MODES, PermissionMode

MODES: tuple[SessionMode, ...] = tuple(
    SessionMode(id=mode, name=name, description=description)
    for mode, name, description in answers.MODES
)


def mode_state(current: str | None) -> SessionModeState:
    """The modes and the current one (an agent without rules is in `default`)."""
    return SessionModeState(current_mode_id=current or "default", available_modes=list(MODES))


def checked_mode(mode_id: str) -> PermissionMode:
    """`mode_id` as a permission mode; an invalid-params error naming the modes when it
    is none of them."""
    if mode_id not in PERMISSION_MODES:
        known = ", ".join(PERMISSION_MODES)
        raise RequestError(-32602, f"no mode {mode_id!r}; the modes are {known}")
    return mode_id


def mode_update(mode: str) -> CurrentModeUpdate:
    return CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode)
