"""Which environment variables count as credentials for tools' subprocesses."""

from __future__ import annotations

import pytest

from assembler.tools.environment import is_secret_name, scrub_environment


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_KEY", "GROQ_KEY", "LLM_KEY",
        "AZURE_OPENAI_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "NPM_AUTH", "GITHUB_TOKEN",
        "HF_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "PGPASSWORD", "MY_SECRET",
        "ASSEMBLER_API_KEY",
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
    assert scrub_environment(env, also=["MY_PROXY_CREDS_VAR"]) == {"PATH": "/bin"}
