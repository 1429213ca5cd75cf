"""The environment a stdio MCP server process starts with.

Only the standard library and the secret-name rule are imported, so code that needs
no server (a test, `render`) can use it without loading the MCP SDK.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from assembler.tools.environment import is_secret_name

#: Variables a stdio server inherits from the parent: enough to find programs, a home
#: directory, a locale and a temporary directory. Nothing else, so the agent's provider
#: keys (and any other secret in the user's shell) never reach a third-party process.
BASE_ENVIRONMENT_POSIX = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
)
#: Windows programs also need these to start at all (SYSTEMROOT for the C runtime and
#: Winsock, PATHEXT/COMSPEC to find programs, the profile directories for their data).
BASE_ENVIRONMENT_WINDOWS = (
    "PATH",
    "PATHEXT",
    "COMSPEC",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
    "NUMBER_OF_PROCESSORS",
)


def server_environment(
    declared: Mapping[str, str], parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a stdio server: a minimal base from `parent` plus `declared`.

    Declared variables are passed as written even when named like secrets: the
    manifest's author gave them to this server on purpose (`GITHUB_TOKEN: ${...}`).
    The SDK adds its own safe defaults (HOME, LOGNAME, PATH, SHELL, TERM, USER) under
    these, which are all part of the base anyway.
    """
    source = os.environ if parent is None else parent
    names = BASE_ENVIRONMENT_WINDOWS if sys.platform == "win32" else BASE_ENVIRONMENT_POSIX
    env = {name: source[name] for name in names if name in source and not is_secret_name(name)}
    env.update(declared)
    return env
