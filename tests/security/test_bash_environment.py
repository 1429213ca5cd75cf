"""Issue 11, item 22: commands get an allowlisted environment, not the user's secrets.

Removing variables *named* like secrets missed `AWS_ACCESS_KEY_ID`, `DATABASE_URL`
(a password inside), `CI_JOB_JWT`, `SLACK_WEBHOOK_URL`, `DOCKER_PASS`, `SENTRY_DSN`
and `KUBE_BEARER`. Commands now start from a short allowlist, plus what the manifest
passes through (`tools.env.passthrough`) or sets (`tools.env.set`). Checked end to end:
a manifest, `build_agent`, and a real `bash` running `env`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assembler import build_agent, load_manifest
from assembler.errors import ManifestError
from assembler.runner.events import ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call

LEAKED = {
    "AWS_ACCESS_KEY_ID": "AKIA-leak-1",
    "DATABASE_URL": "postgres://app:hunter2-leak-2@db/app",
    "CI_JOB_JWT": "eyJ-leak-3",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.example/leak-4",
    "DOCKER_PASS": "leak-5",
    "SENTRY_DSN": "https://leak-6@sentry.example/1",
    "KUBE_BEARER": "leak-7",
    "OPENAI_API_KEY": "sk-leak-8",
    "GITHUB_TOKEN": "ghp-leak-9",
}
PARENT = {
    **LEAKED,
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/someone",
    "LANG": "C.UTF-8",
    "LC_TIME": "C",
    "CI_PIPELINE_ID": "1234",
    "JAVA_HOME": "/opt/java",
    "UNRELATED": "x",
}


def env_seen_by_bash(tmp_path: Path, tools: str = "", parent: dict[str, str] = PARENT) -> str:
    (tmp_path / "agent.yaml").write_text(
        f"version: 1\nname: envcheck\nidentity: Test.\ntools: {{sets: [bash]{tools}}}\n"
    )
    model = ScriptedModel([tool_call("bash", command="env"), text("ok")])
    manifest = load_manifest(tmp_path / "agent.yaml", env=parent)
    agent = build_agent(manifest, provider=model, record_session=False, env=parent)

    async def go() -> str:
        async with agent:
            events = [e async for e in agent.stream("env?")]
        [result] = [e for e in events if isinstance(e, ToolCallResult)]
        return result.content

    return asyncio.run(go())


def test_no_secret_reaches_a_command_by_default(tmp_path: Path) -> None:
    seen = env_seen_by_bash(tmp_path)
    for name, value in LEAKED.items():
        assert value not in seen, name
        assert f"{name}=" not in seen
    assert "UNRELATED=" not in seen and "JAVA_HOME=" not in seen
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in seen
    assert "HOME=/home/someone" in seen
    assert "LC_TIME=C" in seen


def test_named_variables_are_passed_through(tmp_path: Path) -> None:
    seen = env_seen_by_bash(tmp_path, ", env: {passthrough: [DATABASE_URL, JAVA_HOME, NOT_SET]}")
    assert f"DATABASE_URL={LEAKED['DATABASE_URL']}" in seen
    assert "JAVA_HOME=/opt/java" in seen
    assert "NOT_SET" not in seen
    assert "hunter2" in seen and "leak-7" not in seen


def test_a_glob_never_passes_a_secret(tmp_path: Path) -> None:
    seen = env_seen_by_bash(tmp_path, ", env: {passthrough: ['CI_*', 'KUBE_*', '*_URL']}")
    assert "CI_PIPELINE_ID=1234" in seen
    # Not named like a secret, but its value holds a password (issue 20, item 17).
    assert "DATABASE_URL=" not in seen
    for name in ("CI_JOB_JWT", "KUBE_BEARER", "SLACK_WEBHOOK_URL"):
        assert f"{name}=" not in seen, name


def test_set_values_and_interpolation(tmp_path: Path) -> None:
    seen = env_seen_by_bash(
        tmp_path, ", env: {set: {GH_TOKEN: '${GITHUB_TOKEN}', CI: '1', PATH: '/usr/bin:/bin'}}"
    )
    assert f"GH_TOKEN={LEAKED['GITHUB_TOKEN']}" in seen
    assert "GITHUB_TOKEN=" not in seen
    assert "CI=1" in seen
    assert "PATH=/usr/bin:/bin" in seen


def test_an_unset_variable_in_set_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: envcheck\nidentity: Test.\n"
        "tools:\n  env:\n    set: {TOKEN: '${NOT_IN_THE_ENVIRONMENT}'}\n"
    )
    with pytest.raises(ManifestError) as error:
        load_manifest(tmp_path / "agent.yaml", env={"PATH": "/bin"})
    assert "agent.yaml:6:" in str(error.value)
    assert "`NOT_IN_THE_ENVIRONMENT` is not set" in str(error.value)
    assert "[tools.env.set.TOKEN]" in str(error.value)


def test_a_bad_passthrough_entry_is_a_schema_error(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: envcheck\nidentity: Test.\ntools: {env: {passthrough: ['A B']}}\n"
    )
    with pytest.raises(ManifestError, match="a variable name"):
        load_manifest(tmp_path / "agent.yaml")
