"""Where agent-assembler keeps the user's data and configuration.

Sessions are data (they grow, can be deleted, and belong in backups of the user's
home but not in a project); the trust store is configuration; what is derived and can
be rebuilt (a memory index a read-only open had to build) is cache. All follow the XDG
base-directory convention on every platform, because that is what people who run
CLI tools on macOS usually expect too, and one rule is easier to document than three.
Each has its own environment override (`ASSEMBLER_DATA_DIR`, `ASSEMBLER_CONFIG_DIR`,
`ASSEMBLER_CACHE_DIR`) so tests and CI never touch the real home directory.

Nothing here creates directories: whoever first writes creates them.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "agent-assembler"


def default_data_dir() -> Path:
    """`$ASSEMBLER_DATA_DIR`, else `$XDG_DATA_HOME/agent-assembler`, else `~/.local/share/...`."""
    return _base("ASSEMBLER_DATA_DIR", "XDG_DATA_HOME", Path(".local", "share"))


def default_config_dir() -> Path:
    """`$ASSEMBLER_CONFIG_DIR`, else `$XDG_CONFIG_HOME/agent-assembler`, else `~/.config/...`."""
    return _base("ASSEMBLER_CONFIG_DIR", "XDG_CONFIG_HOME", Path(".config"))


def default_cache_dir() -> Path:
    """`$ASSEMBLER_CACHE_DIR`, else `$XDG_CACHE_HOME/agent-assembler`, else `~/.cache/...`."""
    return _base("ASSEMBLER_CACHE_DIR", "XDG_CACHE_HOME", Path(".cache"))


def _base(override: str, xdg: str, home_relative: Path) -> Path:
    explicit = os.environ.get(override)
    if explicit:
        return Path(explicit).expanduser()
    # The XDG spec says relative values are invalid and must be ignored.
    xdg_value = os.environ.get(xdg)
    if xdg_value and Path(xdg_value).is_absolute():
        return Path(xdg_value) / APP_NAME
    return Path.home() / home_relative / APP_NAME
