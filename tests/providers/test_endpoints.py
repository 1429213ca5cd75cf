"""Where requests go: `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`, local server shortcuts,
the API-key rule for servers on this machine, and the token-limit field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble
from wire.anthropic_server import AnthropicServer
from wire.anthropic_server import stream as anthropic_stream
from wire.drive import run_one
from wire.openai_server import OpenAIServer, stream

from assembler import build_agent, load_manifest
from assembler.errors import MissingCredentialsError
from assembler.messages import ModelRequest, ModelSettings, UserMessage
from assembler.providers.endpoints import (
    BUILTIN_PROVIDERS,
    LOCAL_SERVERS,
    effective_base_url,
    is_official_openai,
)
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.providers.registry import create_provider, known_providers

ASK = ModelRequest("", "system", (UserMessage("hi"),), settings=ModelSettings(max_tokens=50))


@pytest.mark.parametrize(
    ("provider", "base_url", "env", "expected"),
    [
        ("openai", None, {}, None),
        (
            "openai",
            None,
            {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"},
            "http://127.0.0.1:8080/v1",
        ),
        ("openai", None, {"OPENAI_BASE_URL": "  "}, None),
        ("openai", "http://a/v1", {"OPENAI_BASE_URL": "http://b/v1"}, "http://a/v1"),
        ("openai", None, {"ANTHROPIC_BASE_URL": "http://b"}, None),
        (
            "anthropic",
            None,
            {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"},
            "http://127.0.0.1:8080",
        ),
        ("ollama", None, {"OPENAI_BASE_URL": "http://b/v1"}, "http://127.0.0.1:11434/v1"),
        ("llamacpp", None, {}, "http://127.0.0.1:8080/v1"),
        ("vllm", None, {}, "http://127.0.0.1:8000/v1"),
        ("lmstudio", None, {}, "http://127.0.0.1:1234/v1"),
        ("lmstudio", "http://gpu-box:1234/v1", {}, "http://gpu-box:1234/v1"),
        ("echo", None, {"OPENAI_BASE_URL": "http://b/v1"}, None),  # an extension's provider
    ],
)
def test_effective_base_url(
    provider: str, base_url: str | None, env: dict[str, str], expected: str | None
) -> None:
    assert effective_base_url(provider, base_url, env) == expected


def test_every_builtin_name_has_a_factory() -> None:
    assert sorted(BUILTIN_PROVIDERS) == list(known_providers())


@pytest.mark.parametrize(
    ("url", "official"),
    [
        (None, True),
        ("https://api.openai.com/v1", True),
        ("https://API.openai.com/v1/", True),
        ("http://127.0.0.1:8080/v1", False),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.openai.com.evil.example/v1", False),
    ],
)
def test_which_endpoint_is_openai_itself(url: str | None, official: bool) -> None:
    assert is_official_openai(url) is official


def test_openai_base_url_from_the_environment_is_used_and_needs_no_key_on_loopback(
    openai_server: OpenAIServer,
) -> None:
    openai_server.add(stream("local"))
    env = {"OPENAI_BASE_URL": openai_server.base_url}

    outcome = run_one(lambda: create_provider("openai", "qwen", env=env), ASK)

    assert outcome.done.message.text == "local"
    (request,) = openai_server.requests
    assert request.headers["authorization"] == "Bearer no-key-needed"
    assert request.body["model"] == "qwen"
    assert request.body["max_tokens"] == 50  # what a compatible server reads
    assert "max_completion_tokens" not in request.body


def test_a_remote_base_url_from_the_environment_still_needs_a_key() -> None:
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        create_provider("openai", "x", env={"OPENAI_BASE_URL": "https://openrouter.ai/api/v1"})


def test_the_sdk_never_reads_the_base_url_behind_the_projects_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The environment the build was given decides, not the process's own."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    openai = create_provider("openai", "gpt-4o", env={"OPENAI_API_KEY": "k"})
    anthropic = create_provider("anthropic", "claude-x", env={"ANTHROPIC_API_KEY": "k"})
    assert str(openai._client.base_url) == "https://api.openai.com/v1/"  # type: ignore[attr-defined]
    assert str(anthropic._client.base_url) == "https://api.anthropic.com"  # type: ignore[attr-defined]


def test_anthropic_base_url_from_the_environment_needs_no_key_on_loopback(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.add(anthropic_stream("local"))
    env = {"ANTHROPIC_BASE_URL": anthropic_server.base_url}

    outcome = run_one(lambda: create_provider("anthropic", "smollm2", env=env), ASK)

    assert outcome.done.message.text == "local"
    assert anthropic_server.requests[0].headers["authorization"] == "Bearer no-key-needed"


def test_anthropic_manifest_base_url_on_loopback_needs_no_key(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.add(anthropic_stream("ok"))
    make = lambda: create_provider(  # noqa: E731
        "anthropic", "m", base_url=anthropic_server.base_url, env={}
    )
    assert run_one(make, ASK).done.message.text == "ok"


# --- local server shortcuts -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LOCAL_SERVERS))
def test_a_shortcut_is_the_openai_provider_at_the_servers_address(name: str) -> None:
    provider = create_provider(name, "qwen2.5:7b", env={})

    assert isinstance(provider, OpenAIChatProvider)
    assert provider.name == f"{name}:qwen2.5:7b"
    assert str(provider._client.base_url) == LOCAL_SERVERS[name] + "/"


def test_a_shortcut_overridden_with_base_url_never_gets_the_openai_key(
    openai_server: OpenAIServer,
) -> None:
    openai_server.add(stream("hi"))
    make = lambda: create_provider(  # noqa: E731
        "ollama",
        "qwen2.5:7b",
        base_url=openai_server.base_url,
        env={"OPENAI_API_KEY": "sk-real-openai-key"},
    )

    assert run_one(make, ASK).done.message.text == "hi"
    (request,) = openai_server.requests
    assert request.headers["authorization"] == "Bearer no-key-needed"
    assert request.body["model"] == "qwen2.5:7b"
    assert request.body["max_tokens"] == 50


def test_a_shortcut_uses_a_key_it_is_given_by_name(openai_server: OpenAIServer) -> None:
    openai_server.add(stream("hi"))
    make = lambda: create_provider(  # noqa: E731
        "vllm",
        "m",
        base_url=openai_server.base_url,
        api_key_env="VLLM_KEY",
        env={"VLLM_KEY": "token-1"},
    )
    run_one(make, ASK).done  # noqa: B018
    assert openai_server.requests[0].headers["authorization"] == "Bearer token-1"
    with pytest.raises(MissingCredentialsError, match="VLLM_KEY"):
        create_provider("vllm", "m", api_key_env="VLLM_KEY", env={})


# --- the build shows the endpoint -------------------------------------------------


def agent_yaml(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(f"version: 1\nname: a\nidentity: x\nmodel: {model}\n")
    return path


@pytest.mark.parametrize(
    ("model", "env", "endpoint"),
    [
        ("openai:gpt-4o", {"OPENAI_API_KEY": "k"}, ""),
        (
            "openai:gpt-4o",
            {"OPENAI_BASE_URL": "http://user:secret@127.0.0.1:9/v1?key=secret"},
            "http://127.0.0.1:9/v1",
        ),
        ("anthropic:claude-x", {"ANTHROPIC_BASE_URL": "http://localhost:9"}, "http://localhost:9"),
        ("ollama:qwen2.5", {}, "http://127.0.0.1:11434/v1"),
    ],
)
def test_the_build_shows_the_effective_endpoint(
    tmp_path: Path, model: str, env: dict[str, str], endpoint: str
) -> None:
    agent = build_agent(load_manifest(agent_yaml(tmp_path, model)), record_session=False, env=env)
    assert agent.runner.endpoint == endpoint


def test_run_uses_openai_base_url_shows_it_and_asks_for_no_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    openai_server: OpenAIServer,
) -> None:
    openai_server.add(stream("from the local server"))
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    manifest = agent_yaml(tmp_path, "openai:smollm2")

    result = assemble(capsys, "run", str(manifest), "--no-session", "-p", "hi")

    assert result.code == 0, result.err
    assert result.out.strip() == "from the local server"
    assert f"via {openai_server.base_url}" in result.err
    body: dict[str, Any] = openai_server.bodies[0]
    assert json.dumps(body["messages"][-1]) == '{"role": "user", "content": "hi"}'
