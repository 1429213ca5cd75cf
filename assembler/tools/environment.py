"""The environment a tool's subprocess sees: the user's, minus credentials.

The model decides what `bash` runs, and a prompt-injected file can ask it to run
`env | curl ...`. The agent's own provider keys are the most valuable thing in the
parent environment, so they, and anything named like a secret, are removed before any
command starts. The list is by name because values cannot be recognised reliably.
Tools that need a credential should get it from the manifest explicitly (`ToolContext.env`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Credentials the assembler itself reads; always removed.
PROVIDER_CREDENTIALS = frozenset({"OPENAI_API_KEY", "ANTHROPIC_API_KEY"})

# `GITHUB_TOKEN`, `FOO_API_KEY`, `GROQ_KEY`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`,
# `PGPASSWORD`, `GOOGLE_APPLICATION_CREDENTIALS`, `NPM_AUTH`, `HF_AUTH_TOKEN`, ...
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:KEY|APIKEY|TOKEN|AUTH|SECRET|PAT)$|PASSWORD|PASSWD|SECRET|CREDENTIAL|_AUTH_|API_KEY",
)
# The assembler's own variables are configuration unless they look like credentials.
_ASSEMBLER_SECRET = re.compile(r"^ASSEMBLER_.*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH)")


# Named like secrets but holding none: a socket path the user's git over SSH needs.
_NOT_SECRETS = frozenset({"SSH_AUTH_SOCK"})


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    upper = name.upper()
    if upper in _NOT_SECRETS:
        return False
    return (
        upper in PROVIDER_CREDENTIALS
        or _SECRET_NAME.search(upper) is not None
        or _ASSEMBLER_SECRET.search(upper) is not None
    )


def scrub_environment(env: Mapping[str, str], also: Iterable[str] = ()) -> dict[str, str]:
    """A copy of `env` without provider credentials, variables named like secrets, and
    the variables named in `also` (the manifest's `api_key_env`, whatever its name)."""
    extra = {name.upper() for name in also}
    return {
        name: value
        for name, value in env.items()
        if not is_secret_name(name) and name.upper() not in extra
    }
