"""`${VAR}` replacement, only where the schema says so (`x-interpolate`).

Interpolation is opt-in per field because a manifest is reviewed like code: a token
in an HTTP header must come from the environment, but a `$` in the identity text is
just text. `${VAR:-default}` gives a default; `$$` is a literal `$`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_PATTERN = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# Where `x-interpolate` appears in schemas/agent.schema.json, as `<$defs name>.<property>`;
# a test keeps the two equal.
INTERPOLATED_FIELDS = (
    "modelObject.base_url",
    "mcpServer.args",
    "mcpServer.env",
    "mcpServer.url",
    "mcpServer.headers",
    "toolEnv.set",
)


def interpolate(text: str, env: Mapping[str, str], on_missing: Callable[[str], None]) -> str:
    """Replace `${VAR}` from `env`; call `on_missing(name)` for each unset variable
    without a default (it is replaced by an empty string)."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        on_missing(name)
        return ""

    return _PATTERN.sub(replace, text)


def referenced_variables(text: str) -> tuple[str, ...]:
    """The names of the `${VAR}` references in `text`, in order, each once."""
    return tuple(dict.fromkeys(m.group(1) for m in _PATTERN.finditer(text) if m.group(1)))
