"""The provider registry: names, model strings, credentials, options, lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assembler.errors import (
    ConfigurationError,
    MissingCredentialsError,
    MissingExtraError,
    ProviderError,
    UnknownProviderError,
    UsageError,
)
from assembler.messages import ModelSettings
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.base import ModelProvider
from assembler.providers.openai_chat import OpenAIChatProvider
from assembler.providers.registry import (
    ProviderConfig,
    ProviderRegistry,
    check_options,
    create_provider,
    is_local_url,
    known_providers,
    parse_model_string,
)
from assembler.providers.scripted import ScriptedProvider
from assembler.testing import ScriptedModel


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai:gpt-4o", ("openai", "gpt-4o")),
        ("anthropic:claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("openai:llama3.1:8b", ("openai", "llama3.1:8b")),  # Ollama tags keep their colon
        (" scripted : demo ", ("scripted", "demo")),
    ],
)
def test_parse_model_string(text: str, expected: tuple[str, str]) -> None:
    assert parse_model_string(text) == expected


@pytest.mark.parametrize("text", ["gpt-4o", "openai:", ":gpt-4o", ""])
def test_parse_model_string_explains_the_form(text: str) -> None:
    with pytest.raises(ProviderError, match=r"provider:model, e\.g\. openai:gpt-4o"):
        parse_model_string(text)


def test_builtin_providers_are_known() -> None:
    assert {"openai", "anthropic", "scripted"} <= set(known_providers())


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(UnknownProviderError) as info:
        create_provider("mistral", "large", env={})
    message = str(info.value)
    assert "'mistral'" in message
    assert "anthropic, llamacpp, lmstudio, ollama, openai, scripted, vllm" in message
    assert isinstance(info.value, ProviderError)


def test_missing_openai_key_names_the_variable() -> None:
    with pytest.raises(
        MissingCredentialsError, match="set the environment variable OPENAI_API_KEY"
    ):
        create_provider("openai", "gpt-4o", env={})


def test_missing_anthropic_key_names_the_variable() -> None:
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        create_provider("anthropic", "claude-test", env={})


def test_api_key_env_overrides_the_variable() -> None:
    with pytest.raises(MissingCredentialsError) as info:
        create_provider("openai", "gpt-4o", api_key_env="OPENROUTER_API_KEY", env={})
    assert "OPENROUTER_API_KEY" in str(info.value)
    assert "OPENAI_API_KEY" not in str(info.value)


def test_remote_base_url_still_needs_a_key() -> None:
    with pytest.raises(MissingCredentialsError):
        create_provider("openai", "x", base_url="https://openrouter.ai/api/v1", env={})


def test_key_is_read_from_the_given_environment() -> None:
    provider = create_provider(
        "openai",
        "gpt-4o",
        api_key_env="MY_KEY",
        env={"MY_KEY": "sk-mine"},
        settings=ModelSettings(temperature=0.5),
    )
    assert isinstance(provider, OpenAIChatProvider)
    assert provider.name == "openai:gpt-4o"
    assert provider.settings.temperature == 0.5


def test_anthropic_provider_is_created() -> None:
    provider = create_provider("anthropic", "claude-test", env={"ANTHROPIC_API_KEY": "k"})
    assert isinstance(provider, AnthropicProvider)
    assert provider.name == "anthropic:claude-test"


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8080/v1",
        "http://[::1]:1234/v1",
        "http://0.0.0.0:8000/v1",
    ],
)
def test_local_servers_need_no_key(url: str) -> None:
    assert is_local_url(url)
    provider = create_provider("openai", "llama3", base_url=url, env={})
    assert isinstance(provider, ModelProvider)


def test_other_options_go_into_every_request_body() -> None:
    env = {"OPENAI_API_KEY": "k"}
    provider = create_provider("openai", "m", options={"top_p": 0.9, "timeout": 5}, env=env)
    assert dict(provider.settings.extra) == {"top_p": 0.9}  # type: ignore[attr-defined]


def test_local_url_detection() -> None:
    assert not is_local_url(None)
    assert not is_local_url("https://api.openai.com/v1")
    assert not is_local_url("http://localhost.example.com/v1")


def test_sdk_options_are_checked() -> None:
    env = {"OPENAI_API_KEY": "k"}
    create_provider("openai", "m", options={"max_retries": 0, "timeout": 5}, env=env)
    with pytest.raises(ProviderError, match="max_retries"):
        create_provider("openai", "m", options={"max_retries": -1}, env=env)
    with pytest.raises(ProviderError, match="timeout"):
        create_provider("openai", "m", options={"timeout": "soon"}, env=env)


def test_register_provider_for_extensions() -> None:
    seen: list[ProviderConfig] = []

    def factory(config: ProviderConfig) -> ModelProvider:
        seen.append(config)
        return ScriptedModel(["hi"], name=config.name)

    providers = ProviderRegistry.builtin()
    providers.register("echo", factory)
    provider = providers.create(
        "echo", "v1", base_url="http://x", options={"a": 1}, env={"K": "v"}, api_key_env="K"
    )

    assert "echo" in providers.names()
    assert "echo" not in known_providers()  # the built-ins stay as they were
    assert "echo" not in ProviderRegistry.builtin()
    with pytest.raises(UnknownProviderError):
        create_provider("echo", "v1", env={})
    assert provider.name == "echo:v1"
    (config,) = seen
    assert (config.provider, config.model, config.base_url) == ("echo", "v1", "http://x")
    assert dict(config.options) == {"a": 1}
    assert config.api_key("UNUSED") == "v"


@pytest.mark.parametrize("name", ["", "a:b"])
def test_register_provider_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="provider name"):
        ProviderRegistry.builtin().register(name, lambda config: ScriptedModel())


def test_scripted_provider_from_options(tmp_path: Path) -> None:
    script = tmp_path / "demo.yaml"
    script.write_text("- text: hello\n", encoding="utf-8")

    provider = create_provider("scripted", "anything", options={"script": str(script)}, env={})

    assert isinstance(provider, ScriptedProvider)
    assert provider.name == f"scripted:{script}"


def test_scripted_provider_needs_a_script() -> None:
    with pytest.raises(ProviderError, match=r"needs `options\.script`"):
        create_provider("scripted", "demo", env={})


@pytest.mark.parametrize(
    ("provider", "module", "extra", "what"),
    [
        ("openai", "openai", "openai", "the OpenAI SDK"),
        ("ollama", "openai", "openai", "the OpenAI SDK"),
        ("anthropic", "anthropic", "anthropic", "the Anthropic SDK"),
        ("openai", "httpx2", "openai", "the OpenAI SDK"),
    ],
)
def test_missing_sdk_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str, extra: str, what: str
) -> None:
    """Without the SDK (or its HTTP client), the message names the extra to install,
    before any complaint about a missing API key."""
    monkeypatch.setitem(sys.modules, module, None)  # `import openai` now fails
    for ours in ("assembler.providers.openai_chat", "assembler.providers.anthropic_messages"):
        monkeypatch.delitem(sys.modules, ours, raising=False)
    with pytest.raises(MissingExtraError) as raised:
        create_provider(provider, "gpt-4o", env={})
    assert str(raised.value) == (
        f"{provider}:gpt-4o needs {what}: pip install 'agent-assembler[{extra}]'"
    )


def test_importing_the_registry_does_not_import_the_sdks() -> None:
    code = (
        "import sys, assembler.providers.registry\n"
        "loaded = [m for m in ('openai', 'anthropic', 'httpx2') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("provider", "options", "message"),
    [
        ("openai", {"timeout": -1}, "openai:m: `timeout` must be a positive number of seconds"),
        ("ollama", {"max_retries": "x"}, "ollama:m: `max_retries` must be a non-negative"),
        ("anthropic", {"headers": ["a"]}, "anthropic:m: `headers` must be a mapping"),
        ("scripted", {}, "scripted:m: the scripted provider needs `options.script`"),
    ],
)
def test_configuration_mistakes_are_usage_errors_found_without_creating_the_provider(
    provider: str, options: dict[str, object], message: str
) -> None:
    """`check_options` makes the creation's checks with no SDK and no key; both it and
    the creation raise a `ConfigurationError` (a usage error, also a `ProviderError`)."""
    with pytest.raises(ConfigurationError) as checked:
        check_options(provider, "m", options)
    assert str(checked.value).startswith(message)
    assert isinstance(checked.value, UsageError) and isinstance(checked.value, ProviderError)
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    with pytest.raises(ConfigurationError, match=message.split(": ", 1)[1][:20]):
        create_provider(provider, "m", options=options, env=env)
    check_options(provider, "m", {"timeout": 5} if provider != "scripted" else {"script": "s"})
    check_options("from-an-extension", "m", {"anything": True})  # its own to check
