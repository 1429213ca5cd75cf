"""Which model an agent talks to: the manifest's, or the one `--model` names.

Kept apart from the build so the CLI commands that only need a provider (memory
consolidation) and the build agree on one rule for overrides and scripted replays.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from assembler.errors import ConfigurationError
from assembler.manifest.model import Manifest
from assembler.messages import ModelSettings
from assembler.pricing import Price, known_price
from assembler.providers.base import ModelProvider
from assembler.providers.endpoints import effective_base_url
from assembler.providers.registry import (
    ProviderRegistry,
    check_options,
    create_provider,
    known_providers,
    parse_model_string,
)
from assembler.providers.windows import max_output_tokens
from assembler.urls import display_url
from assembler.user_config import MODEL_VARIABLE, config_file, default_model


@dataclass(frozen=True)
class ModelChoice:
    provider: str
    name: str
    base_url: str | None
    api_key_env: str | None
    settings: ModelSettings
    options: Mapping[str, object]
    shown_base_url: str | None = None
    """`base_url` with `${VAR}` unexpanded and credentials left out: for banners."""
    manifest_price: Price | None = None
    """`model.price`, when the manifest's model is the one chosen."""

    @property
    def price(self) -> Price | None:
        """What the model costs: the manifest's `model.price`, else the price table's."""
        return self.manifest_price or known_price(self.provider, self.name)

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


def choose_model(
    manifest: Manifest, override: str | None = None, env: Mapping[str, str] | None = None
) -> ModelChoice:
    """`override` (`provider:name`, as `--model` gives it), else the manifest's model,
    else the user's default (`ASSEMBLER_MODEL`, or `model:` in the user's config file;
    `env` stands for `os.environ`). No model at all is a `ConfigurationError`.

    An override of the same provider keeps the manifest's `base_url`, key variable
    and options; another provider starts from defaults.
    """
    spec = manifest.model
    if not override and spec is None:
        override = _default_model(manifest, os.environ if env is None else env)
    if override:
        provider, name = parse_model_string(override)
        if spec is None or spec.provider != provider:
            settings = ModelSettings(max_tokens=max_output_tokens(provider, name))
            return _with_script(manifest, ModelChoice(provider, name, None, None, settings, {}))
    else:
        assert spec is not None
        provider, name = spec.provider, spec.name
    options = dict(spec.options)
    if spec.script is not None and name == spec.name:  # `scripted:<other file>` is its own
        options["script"] = str(spec.script)
    settings = manifest_settings(manifest) or ModelSettings()
    if not settings.max_tokens:  # the model family's own reply limit, where known
        settings = replace(settings, max_tokens=max_output_tokens(provider, name))
    shown = display_url(spec.base_url_template or spec.base_url) if spec.base_url else None
    price = spec.price if name == spec.name else None  # a price is its model's only
    return _with_script(
        manifest,
        ModelChoice(
            provider, name, spec.base_url, spec.api_key_env, settings, options, shown, price
        ),
    )


def manifest_settings(manifest: Manifest) -> ModelSettings | None:
    """The settings the manifest's own model is sent with (None without `model:`):
    also what a provider given to `build_agent` gets (a replay compares them)."""
    spec = manifest.model
    if spec is None:
        return None
    return ModelSettings(
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        tool_choice=spec.tool_choice,
        cache=spec.cache,
        thinking_budget=spec.thinking_budget,
        reasoning_effort=spec.reasoning_effort,
    )


def default_label(manifest: Manifest, env: Mapping[str, str] | None = None) -> str:
    """The `provider:name` a run of `manifest` uses without `--model` ("" when none):
    its own model, else the user's default."""
    if manifest.model is not None:
        return manifest.model.label
    default = default_model(os.environ if env is None else env)
    return default.value if default is not None else ""


def _default_model(manifest: Manifest, env: Mapping[str, str]) -> str:
    default = default_model(env)
    if default is None:
        raise ConfigurationError(
            f"{manifest.name}: no model: set `model:` in the manifest, pass --model "
            f"provider:name, or set a default ({MODEL_VARIABLE}, or `model:` in {config_file()})"
        )
    try:
        parse_model_string(default.value)
    except ConfigurationError as e:
        raise ConfigurationError(f"{e} (from {default.source})") from e
    return default.value


def _with_script(manifest: Manifest, choice: ModelChoice) -> ModelChoice:
    """`scripted:<file>` names its script, relative to the manifest."""
    if choice.provider != "scripted" or "script" in choice.options:
        return choice
    script = Path(os.path.normpath(manifest.directory / choice.name))
    return ModelChoice(
        choice.provider,
        choice.name,
        None,
        None,
        choice.settings,
        {"script": str(script)},
        manifest_price=choice.manifest_price,
    )


def check_model(
    manifest: Manifest, override: str | None = None, env: Mapping[str, str] | None = None
) -> ModelChoice:
    """`choose_model`, and the checks creating its provider would make of the setup
    (a known provider, sensible options), without creating it: for a caller that runs
    many builds (`assemble eval`) and reports a configuration mistake once. A provider
    only an extension can register is left to the build."""
    choice = choose_model(manifest, override, env)
    if not is_builtin_provider(choice.provider) and not manifest.extensions:
        ProviderRegistry.builtin().create(choice.provider, choice.name)  # names the known
    check_options(choice.provider, choice.name, choice.options)
    return choice


def shown_endpoint(choice: ModelChoice, env: Mapping[str, str]) -> str:
    """The endpoint for banners: the manifest's `base_url` as written (`${VAR}`
    unexpanded), else `OPENAI_BASE_URL`/`ANTHROPIC_BASE_URL` or a local server's
    default; credentials, query and fragment left out. Empty for the provider's own."""
    if choice.shown_base_url:
        return choice.shown_base_url
    endpoint = effective_base_url(choice.provider, choice.base_url, env)
    return display_url(endpoint) if endpoint else ""


def is_builtin_provider(name: str) -> bool:
    """Built-in providers are created before extensions load, so a missing API key
    fails before any project code runs."""
    return name in known_providers()


def create_model_provider(
    choice: ModelChoice, env: Mapping[str, str], providers: ProviderRegistry | None = None
) -> ModelProvider:
    """`providers`: the agent's own registry (built-ins plus its extensions')."""
    return create_provider(
        choice.provider,
        choice.name,
        base_url=choice.base_url,
        api_key_env=choice.api_key_env,
        settings=choice.settings,
        options=choice.options,
        env=env,
        registry=providers,
        shown_base_url=choice.shown_base_url,
    )
