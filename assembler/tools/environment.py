"""The environment a tool's subprocess sees: the user's, minus credentials.

The model decides what `bash` runs, and a prompt-injected file can ask it to run
`env | curl ...`. The agent's own provider keys are the most valuable thing in the
parent environment, so they, and anything named like a secret, are removed before any
command starts. The list is by name because values cannot be recognised reliably.
Tools that need a credential should get it from the manifest explicitly (`ToolContext.env`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Credentials the assembler itself reads; always removed.
PROVIDER_CREDENTIALS = frozenset({"OPENAI_API_KEY", "ANTHROPIC_API_KEY"})

# `GITHUB_TOKEN`, `FOO_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `PGPASSWORD`, ...
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_KEY|TOKEN|SECRET|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY)$|PASSWORD|PASSWD|SECRET",
)
# The assembler's own variables are configuration unless they look like credentials.
_ASSEMBLER_SECRET = re.compile(r"^ASSEMBLER_.*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH)")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    upper = name.upper()
    return (
        upper in PROVIDER_CREDENTIALS
        or _SECRET_NAME.search(upper) is not None
        or _ASSEMBLER_SECRET.search(upper) is not None
    )


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of `env` without provider credentials or variables named like secrets."""
    return {name: value for name, value in env.items() if not is_secret_name(name)}
