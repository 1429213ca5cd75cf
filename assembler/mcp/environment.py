"""The environment a stdio MCP server process starts with.

Only the standard library and the tools' environment rules are imported, so code that
needs no server (a test, `render`) can use it without loading the MCP SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from assembler.tools.environment import (
    BASE_VARIABLES_POSIX,
    BASE_VARIABLES_WINDOWS,
    base_environment,
)

#: Variables a stdio server inherits from the parent: the same base as `bash` gets
#: (enough to find programs, a home directory, a locale and a temporary directory).
#: Nothing else, so the agent's provider keys (and any other secret in the user's
#: shell) never reach a third-party process.
BASE_ENVIRONMENT_POSIX = BASE_VARIABLES_POSIX
BASE_ENVIRONMENT_WINDOWS = BASE_VARIABLES_WINDOWS


def server_environment(
    declared: Mapping[str, str], parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a stdio server: the base from `parent` plus `declared`.

    Declared variables are passed as written even when named like secrets: the
    manifest's author gave them to this server on purpose (`GITHUB_TOKEN: ${...}`).
    The SDK adds its own safe defaults (HOME, LOGNAME, PATH, SHELL, TERM, USER) under
    these, which are all part of the base anyway. The manifest-wide `tools.env`
    applies to the agent's own commands, not to servers: each server declares what it
    needs in its own `env`.
    """
    env = base_environment(os.environ if parent is None else parent)
    env.update(declared)
    return env
