"""The environment a tool's subprocess sees: an allowlist, never the whole of the user's.

The model decides what `bash` runs, and a prompt-injected file can ask it to run
`env | curl ...`. Removing variables *named* like secrets was tried first and missed
`AWS_ACCESS_KEY_ID`, `DATABASE_URL` (a password inside), `CI_JOB_JWT`,
`SLACK_WEBHOOK_URL`, `DOCKER_PASS`, `SENTRY_DSN` and `KUBE_BEARER`: a name does not
say what a value grants. So a subprocess starts from a short list of variables that
programs need to run at all (`BASE_VARIABLES`), and gets anything else only when the
manifest names it (`tools.env.passthrough`) or sets it (`tools.env.set`), as Codex's
shell environment policy does.

A passthrough entry is a name (passed as is, even when it looks like a secret: the
manifest asked for it by name) or a glob with `*` (`NODE_*`), which never matches a
name that looks like a secret, the agent's own API key variables, nor a variable whose
value carries a credential whatever its name (`APP_DB=postgres://u:pw@db/x`, an Azure
connection string's `AccountKey=`): a secret goes to commands only when it is named in
full. MCP stdio servers start from the same base (`assembler.mcp.environment`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

#: What every program may need: where programs are, who and where the user is, the
#: locale and terminal, temporary files, the time zone. `LC_*` is a prefix.
BASE_VARIABLES_POSIX = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TMPDIR",
    "TZ",
)
#: Windows programs also need these to start at all (SYSTEMROOT for the C runtime and
#: Winsock, PATHEXT/COMSPEC to find programs, the profile directories for their data).
BASE_VARIABLES_WINDOWS = (
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
BASE_VARIABLES = BASE_VARIABLES_WINDOWS if sys.platform == "win32" else BASE_VARIABLES_POSIX

#: Set for every tool command unless the manifest passes or sets another value: Python
#: writes no `__pycache__` into the workspace, so an agent running tests leaves the
#: tree as it found it (a diff, or an evaluation's `unchanged` check, sees only what
#: the agent meant to change).
TOOL_DEFAULTS = {"PYTHONDONTWRITEBYTECODE": "1"}

#: Credentials the assembler itself reads.
PROVIDER_CREDENTIALS = frozenset({"OPENAI_API_KEY", "ANTHROPIC_API_KEY"})

# `GITHUB_TOKEN`, `FOO_API_KEY`, `GROQ_KEY`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`,
# `PGPASSWORD`, `GOOGLE_APPLICATION_CREDENTIALS`, `NPM_AUTH`, `HF_AUTH_TOKEN`, ...
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:KEY|APIKEY|TOKEN|AUTH|SECRET|PAT|PASS|JWT|DSN|BEARER|WEBHOOK|WEBHOOK_URL)$"
    r"|PASSWORD|PASSWD|PASSPHRASE|SECRET|CREDENTIAL|_AUTH_|API_KEY|ACCESS_KEY|PRIVATE"
    r"|CONNECTION_?STRING|CONN_?STR",
)
# The assembler's own variables are configuration unless they look like credentials.
_ASSEMBLER_SECRET = re.compile(r"^ASSEMBLER_.*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH)")
# Named like secrets but holding none.
_NOT_SECRETS = frozenset({"SSH_AUTH_SOCK"})


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential.

    Only used to keep globs from matching secrets and to mask values: a name that
    does not look secret may still hold one, which is why nothing is passed by default.
    """
    upper = name.upper()
    if upper in _NOT_SECRETS:
        return False
    return (
        upper in PROVIDER_CREDENTIALS
        or _SECRET_NAME.search(upper) is not None
        or _ASSEMBLER_SECRET.search(upper) is not None
    )


# A URL with user-info (`scheme://user:password@host`, `https://TOKEN@github.com`): git,
# database and queue URLs put credentials there, often in the user part alone.
_URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+@")
# A `key=value` pair whose key names a credential: connection strings (`AccountKey=`,
# `Password=`, `SharedAccessKey=`), libpq's `password=`, query strings (`?token=`,
# Azure SAS `sig=`). The key must start the value or follow a separator.
_CREDENTIAL_PAIR = re.compile(
    r"(?:^|[\s;&?,])(?:account_?key|shared_?access_?key|access_?key|secret_?key|api_?key"
    r"|client_?secret|secret|password|passwd|pwd|passphrase|access_?token|auth_?token"
    r"|refresh_?token|token|sig|signature)\s*=\s*[^\s;&]",
    re.IGNORECASE,
)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")


def carries_credentials(value: str) -> bool:
    """Whether a variable's value holds a credential, whatever the variable is called.

    Like `is_secret_name`, only used to keep globs away: a value can hide a secret in
    ways no pattern sees, which is why nothing is passed by default.
    """
    return (
        _URL_USERINFO.search(value) is not None
        or _CREDENTIAL_PAIR.search(value) is not None
        or _PRIVATE_KEY.search(value) is not None
    )


def base_environment(parent: Mapping[str, str]) -> dict[str, str]:
    """The variables of `parent` that every subprocess gets (`BASE_VARIABLES`)."""
    return _matching(parent, BASE_VARIABLES, exclude=frozenset())


def tool_environment(
    parent: Mapping[str, str],
    *,
    passthrough: Iterable[str] = (),
    assigned: Mapping[str, str] | None = None,
    also_secret: Iterable[str] = (),
) -> dict[str, str]:
    """The environment of tool subprocesses: the base, the manifest's passthrough,
    then the manifest's `set` values on top.

    `also_secret` names variables that hold the agent's own API keys under other
    names (a manifest's `api_key_env`); like secret-looking names, a glob never
    matches them, only their full name does.
    """
    exclude = frozenset(name.upper() for name in (*PROVIDER_CREDENTIALS, *also_secret))
    env = base_environment(parent)
    env.update(TOOL_DEFAULTS)
    env.update(_matching(parent, tuple(passthrough), exclude=exclude))
    env.update(assigned or {})
    return env


def _matching(
    parent: Mapping[str, str], patterns: tuple[str, ...], *, exclude: frozenset[str]
) -> dict[str, str]:
    names = {p for p in patterns if "*" not in p}
    globs = [p for p in patterns if "*" in p]
    found = {name: value for name, value in parent.items() if name in names}
    for name, value in parent.items():
        if name in found or not any(fnmatchcase(name, glob) for glob in globs):
            continue
        if is_secret_name(name) or name.upper() in exclude or carries_credentials(value):
            continue
        found[name] = value
    return found
