"""Issue 20, item 17: a passthrough glob judged names only, so `*_URL` handed a command
`DATABASE_URL=postgres://app:hunter2@db/app`, and `APP_*` handed it an Azure connection
string with its `AccountKey=`. A glob now also skips a value that carries a credential
(user-info in a URL, a `key=value` pair naming a password, key, token or signature, a
private key) and names such as `*PASSPHRASE*` and `*CONNECTION_STRING*`; a variable
written in full still passes, as the manifest asked for it by name.

Checked end to end: a manifest with a glob, `build_agent`, and a real `bash` running `env`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assembler import build_agent, load_manifest
from assembler.runner.events import ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call
from assembler.tools.environment import carries_credentials, is_secret_name

CARRIERS = {
    "APP_DATABASE_URL": "postgres://app:hunter2-a@db.internal:5432/app",
    "APP_REDIS": "redis://:hunter2-b@cache:6379/0",
    "APP_GIT_REMOTE": "https://ghp_hunter2c@github.com/org/repo.git",
    "APP_STORAGE": (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=hunter2d==;"
        "EndpointSuffix=core.windows.net"
    ),
    "APP_ODBC": "Driver={ODBC Driver 18};Server=db;Uid=sa;Password=hunter2e;",
    "APP_MYSQL_OPTS": "host=db user=app password=hunter2f",
    "APP_BLOB": "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=hunter2g",
    "APP_HOOK": "https://example.com/hook?token=hunter2h",
    "APP_SERVICEBUS": "Endpoint=sb://ns/;SharedAccessKeyName=root;SharedAccessKey=hunter2i",
    "APP_PEM": "-----BEGIN OPENSSH PRIVATE KEY-----\nhunter2j\n-----END OPENSSH PRIVATE KEY-----",
}
NAMED = {
    "APP_GPG_PASSPHRASE": "hunter2k",
    "APP_SQL_CONNECTION_STRING": "Server=db;Database=app",
    "APP_CONNECTIONSTRING": "Server=db;Database=app",
}
HARMLESS = {
    "APP_HOME_URL": "https://example.com/docs?page=2",
    "APP_MODE": "production",
    "APP_PUBLIC_URL": "https://cdn.example.com/assets",
    "APP_EMAIL": "ops@example.com",
}
PARENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", **CARRIERS, **NAMED, **HARMLESS}


def env_seen_by_bash(tmp_path: Path, passthrough: str) -> str:
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: envcheck\nidentity: Test.\n"
        f"tools: {{sets: [bash], env: {{passthrough: {passthrough}}}}}\n"
    )
    model = ScriptedModel([tool_call("bash", command="env"), text("ok")])
    manifest = load_manifest(tmp_path / "agent.yaml", env=PARENT)
    agent = build_agent(manifest, provider=model, record_session=False, env=PARENT)

    async def go() -> str:
        async with agent:
            events = [e async for e in agent.stream("env?")]
        [result] = [e for e in events if isinstance(e, ToolCallResult)]
        return result.content

    return asyncio.run(go())


def test_a_glob_skips_values_and_names_that_carry_credentials(tmp_path: Path) -> None:
    seen = env_seen_by_bash(tmp_path, "['APP_*']")
    assert "hunter2" not in seen
    for name in (*CARRIERS, *NAMED):
        assert f"{name}=" not in seen, name
    for name, value in HARMLESS.items():
        assert f"{name}={value}" in seen, name


def test_a_name_written_in_full_still_passes(tmp_path: Path) -> None:
    named = ["APP_DATABASE_URL", "APP_STORAGE", "APP_GPG_PASSPHRASE", "APP_SQL_CONNECTION_STRING"]
    seen = env_seen_by_bash(tmp_path, repr(named).replace('"', "'"))
    for name in named:
        assert f"{name}={PARENT[name].splitlines()[0]}" in seen, name
    assert "APP_ODBC=" not in seen and "APP_MODE=" not in seen


@pytest.mark.parametrize("value", list(CARRIERS.values()))
def test_each_carrier_is_recognised(value: str) -> None:
    assert carries_credentials(value)


@pytest.mark.parametrize(
    "value",
    [
        *HARMLESS.values(),
        "/usr/share/keys",
        "key=value",  # a key named `key` says nothing: too common in ordinary settings
        "-Dfile.encoding=UTF-8 -Xmx2g",
        "https://example.com/search?q=password",
        "git@github.com:org/repo.git",
    ],
)
def test_ordinary_values_pass(value: str) -> None:
    assert not carries_credentials(value)


@pytest.mark.parametrize(
    "name", ["GPG_PASSPHRASE", "SIGNING_PASSPHRASE_FILE", "AZURE_CONNECTION_STRING", "DB_CONNSTR"]
)
def test_more_names_are_credentials(name: str) -> None:
    assert is_secret_name(name)
