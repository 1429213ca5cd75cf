"""Provider names to factories: how `openai:gpt-4o` becomes a `ModelProvider`.

Factories import their SDK inside the factory, so importing this module (and
validating a manifest) costs nothing, and a missing SDK is reported only for the
provider that needs it, as one line naming the extra to install (`assembler.extras`).

The built-in providers are fixed. What an agent's extensions register goes into that
agent's own `ProviderRegistry` (`ProviderRegistry.builtin()` plus `register`), never
into a process-wide table: a provider one agent's extension adds must not exist for
the next agent built in the same process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from assembler.errors import (
    ConfigurationError,
    MissingCredentialsError,
    UnknownProviderError,
)
from assembler.extras import requires
from assembler.messages import ModelSettings
from assembler.providers.base import ModelProvider
from assembler.providers.endpoints import (
    LOCAL_SERVERS,
    effective_base_url,
    is_local_url,
)

__all__ = [
    "LOCAL_API_KEY_PLACEHOLDER",
    "ProviderConfig",
    "ProviderFactory",
    "ProviderRegistry",
    "create_provider",
    "effective_base_url",
    "is_local_url",
    "known_providers",
    "parse_model_string",
]

LOCAL_API_KEY_PLACEHOLDER = "no-key-needed"
"""Sent as the API key to a local server when none is configured (the SDKs need one)."""


@dataclass(frozen=True)
class ProviderConfig:
    """Everything a factory is given; one object so new fields break no factory.

    `base_url` is the manifest's; a built-in factory resolves the endpoint it really
    uses with `effective_base_url` (environment variables, local shortcuts).
    `shown_base_url` is the same URL as messages may show it (made from the manifest's
    text, `${VAR}` values left out: `assembler.urls.shown_url`).
    """

    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    settings: ModelSettings = field(default_factory=ModelSettings)
    options: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    shown_base_url: str | None = None

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def api_key(self, default_env: str, *, optional: bool = False) -> str | None:
        """The API key from `api_key_env` (or `default_env`); missing is an error unless
        `optional`. The message names the variable to set."""
        variable = self.api_key_env or default_env
        value = self.env.get(variable, "").strip()
        if value:
            return value
        if optional:
            return None
        raise MissingCredentialsError(
            f"{self.name} needs an API key: set the environment variable {variable}"
            + ("" if self.api_key_env else " (or name another one with `api_key_env`)")
        )


ProviderFactory = Callable[[ProviderConfig], ModelProvider]


class ProviderRegistry:
    """The providers one agent can use: the built-ins, plus its extensions' own.

    Build one per agent with `ProviderRegistry.builtin()`; `register` adds to (or
    replaces in) this registry only.
    """

    def __init__(self, factories: Mapping[str, ProviderFactory] | None = None) -> None:
        self._factories: dict[str, ProviderFactory] = dict(factories or {})

    @classmethod
    def builtin(cls) -> ProviderRegistry:
        """A new registry holding the built-in providers only."""
        return cls(_BUILTIN)

    def register(self, name: str, factory: ProviderFactory) -> None:
        """Make `name:<model>` usable here; registering a name again replaces it."""
        if not name or ":" in name:
            raise ValueError(f"invalid provider name {name!r}: a non-empty name without ':'")
        self._factories[name] = factory

    def names(self) -> tuple[str, ...]:
        """The provider names this registry knows, sorted."""
        return tuple(sorted(self._factories))

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def create(
        self,
        provider: str,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        settings: ModelSettings | None = None,
        options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] = os.environ,
        shown_base_url: str | None = None,
    ) -> ModelProvider:
        """Build the provider registered as `provider` for `model`."""
        factory = self._factories.get(provider)
        if factory is None:
            raise UnknownProviderError(
                f"unknown model provider {provider!r}; known providers: {', '.join(self.names())}"
            )
        config = ProviderConfig(
            provider=provider,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            settings=settings or ModelSettings(),
            options=MappingProxyType(dict(options or {})),
            env=env,
            shown_base_url=shown_base_url,
        )
        return factory(config)


def known_providers() -> tuple[str, ...]:
    """The built-in provider names, sorted."""
    return tuple(sorted(_BUILTIN))


def parse_model_string(value: str) -> tuple[str, str]:
    """`"openai:gpt-4o"` -> `("openai", "gpt-4o")`; the model part may contain colons."""
    provider, sep, model = value.strip().partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise ConfigurationError(
            f"invalid model {value!r}: use the form provider:model, e.g. openai:gpt-4o "
            f"(known providers: {', '.join(known_providers())})"
        )
    return provider.strip(), model.strip()


def create_provider(
    provider: str,
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    settings: ModelSettings | None = None,
    options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] = os.environ,
    registry: ProviderRegistry | None = None,
    shown_base_url: str | None = None,
) -> ModelProvider:
    """Build `provider` for `model` from `registry` (default: the built-ins only)."""
    return (registry or ProviderRegistry.builtin()).create(
        provider,
        model,
        base_url=base_url,
        api_key_env=api_key_env,
        settings=settings,
        options=options,
        env=env,
        shown_base_url=shown_base_url,
    )


CLIENT_OPTIONS = ("max_retries", "timeout", "headers")


def check_options(provider: str, model: str, options: Mapping[str, Any]) -> None:
    """The checks a built-in provider makes of its options when it is created, without
    creating it (no SDK import, no API key): a `ConfigurationError` for the first
    mistake. Providers an extension registers check their own."""
    config = ProviderConfig(provider=provider, model=model, options=MappingProxyType(dict(options)))
    if provider == "scripted":
        _script_path(config)
    elif provider in _BUILTIN:
        _sdk_options(config)


def _request_settings(config: ProviderConfig) -> ModelSettings:
    """The manifest's settings, with every option that is not a client option
    (`top_p`, `seed`, `reasoning_effort`, ...) sent in the request body as is."""
    extra = {k: v for k, v in config.options.items() if k not in (*CLIENT_OPTIONS, "script")}
    if not extra:
        return config.settings
    return replace(config.settings, extra={**config.settings.extra, **extra})


def _sdk_options(config: ProviderConfig) -> dict[str, Any]:
    """The client options of the SDK-backed providers: max_retries, timeout, headers."""
    out: dict[str, Any] = {}
    retries = config.options.get("max_retries")
    if retries is not None:
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ConfigurationError(f"{config.name}: `max_retries` must be a non-negative integer")
        out["max_retries"] = retries
    timeout = config.options.get("timeout")
    if timeout is not None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigurationError(
                f"{config.name}: `timeout` must be a positive number of seconds"
            )
        out["timeout"] = float(timeout)
    headers = config.options.get("headers")
    if headers is not None:
        if not isinstance(headers, Mapping):
            raise ConfigurationError(f"{config.name}: `headers` must be a mapping")
        out["default_headers"] = {str(k): str(v) for k, v in headers.items()}
    return out


def _openai_factory(config: ProviderConfig) -> ModelProvider:
    # The SDK first: without it, the missing key is not the problem to report.
    with requires("openai", config.name):
        from assembler.providers.openai_chat import OpenAIChatProvider
    base_url = effective_base_url(config.provider, config.base_url, config.env)
    if config.provider in LOCAL_SERVERS:
        # Never the OpenAI key: a local shortcut gets only a key it is given by name.
        api_key = config.api_key(config.api_key_env) if config.api_key_env else None
    else:
        api_key = config.api_key("OPENAI_API_KEY", optional=is_local_url(base_url))
    return OpenAIChatProvider(
        config.model,
        api_key=api_key or LOCAL_API_KEY_PLACEHOLDER,
        base_url=base_url,
        settings=_request_settings(config),
        provider_name=config.provider,
        shown_url=config.shown_base_url,
        **_sdk_options(config),
    )


def _anthropic_factory(config: ProviderConfig) -> ModelProvider:
    with requires("anthropic", config.name):
        from assembler.providers.anthropic_messages import AnthropicProvider
    base_url = effective_base_url(config.provider, config.base_url, config.env)
    api_key = config.api_key("ANTHROPIC_API_KEY", optional=is_local_url(base_url))
    return AnthropicProvider(
        config.model,
        api_key=api_key or LOCAL_API_KEY_PLACEHOLDER,
        base_url=base_url,
        settings=_request_settings(config),
        provider_name=config.provider,
        shown_url=config.shown_base_url,
        **_sdk_options(config),
    )


def _scripted_factory(config: ProviderConfig) -> ModelProvider:
    from assembler.providers.scripted import ScriptedProvider, load_script

    script = _script_path(config)
    return ScriptedProvider(load_script(script), name=f"scripted:{script}")


def _script_path(config: ProviderConfig) -> str:
    script = config.options.get("script")
    if not isinstance(script, str) or not script:
        raise ConfigurationError(
            f"{config.name}: the scripted provider needs `options.script`, "
            "the path of a YAML file of replies"
        )
    return script


_BUILTIN: Mapping[str, ProviderFactory] = MappingProxyType(
    {
        "openai": _openai_factory,
        "anthropic": _anthropic_factory,
        "scripted": _scripted_factory,
        **dict.fromkeys(LOCAL_SERVERS, _openai_factory),
    }
)
