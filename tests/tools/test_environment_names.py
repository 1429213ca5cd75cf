"""Which environment variables count as credentials for tools' subprocesses."""

from __future__ import annotations

import pytest

from assembler.mcp.environment import server_environment
from assembler.tools.environment import (
    TOOL_DEFAULTS,
    base_environment,
    is_secret_name,
    tool_environment,
)


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_KEY", "GROQ_KEY", "LLM_KEY",
        "AZURE_OPENAI_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "NPM_AUTH", "GITHUB_TOKEN",
        "HF_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "PGPASSWORD", "MY_SECRET",
        "ASSEMBLER_API_KEY", "CI_JOB_JWT", "DOCKER_PASS", "SENTRY_DSN", "KUBE_BEARER",
        "SLACK_WEBHOOK_URL", "AWS_ACCESS_KEY_ID", "SSH_PRIVATE_KEY",
    ],
)  # fmt: skip
def test_credentials_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "LANG", "TERM", "KEYBOARD", "MONKEY", "SSH_AUTH_SOCK", "ASSEMBLER_HOME"],
)
def test_ordinary_variables_pass(name: str) -> None:
    assert not is_secret_name(name)


def test_the_manifests_own_key_variable_is_removed_whatever_its_name() -> None:
    env = {"PATH": "/bin", "MY_PROXY_CREDS_VAR": "sk-x"}
    assert tool_environment(env, passthrough=["MY_*"], also_secret=["MY_PROXY_CREDS_VAR"]) == {
        "PATH": "/bin",
        **TOOL_DEFAULTS,
    }


PARENT = {
    "PATH": "/bin",
    "HOME": "/home/u",
    "LC_ALL": "C",
    "GITHUB_TOKEN": "ghp-x",
    "DATABASE_URL": "postgres://u:pw@db/x",
}


def test_the_agents_own_key_variable_needs_its_full_name() -> None:
    parent = {"PATH": "/bin", "MY_GATEWAY": "sk-gateway", "MY_SETTING": "1"}
    globbed = tool_environment(parent, passthrough=["MY_*"], also_secret=["MY_GATEWAY"])
    assert globbed == {"PATH": "/bin", "MY_SETTING": "1", **TOOL_DEFAULTS}
    named = tool_environment(parent, passthrough=["MY_GATEWAY"], also_secret=["MY_GATEWAY"])
    assert named["MY_GATEWAY"] == "sk-gateway"


def test_mcp_servers_start_from_the_same_base() -> None:
    assert server_environment({}, PARENT) == base_environment(PARENT)
    declared = server_environment({"GITHUB_TOKEN": "given on purpose"}, PARENT)
    assert declared["GITHUB_TOKEN"] == "given on purpose"
    assert "DATABASE_URL" not in declared
    assert base_environment(PARENT) == {"PATH": "/bin", "HOME": "/home/u", "LC_ALL": "C"}
