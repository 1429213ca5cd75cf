"""Switching a built agent to another model between runs (the terminal's `/model`),
and finding the model a session was last switched to (so resuming it goes on with
that model).

A switch goes through the same checks as `--model` (`check_model`: a known provider,
sensible options, the provider's SDK and key), then replaces, together, everything
the runner keeps about its model: the provider, the settings and name sent with each
request, the reply limit, the context window, the price the meter charges, the
endpoint banners show, the model memory asks and the names telemetry spans carry.
The session records it as a `model` entry on the branch, so a resumed session
(`--continue`, `--resume`) uses the model it was left with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from assembler.agent.model_choice import (
    ModelChoice,
    check_model,
    create_model_provider,
    shown_endpoint,
)
from assembler.agent.services import telemetry_endpoint, traced_provider
from assembler.errors import ConfigurationError, SessionError
from assembler.providers.windows import context_window, max_output_tokens

if TYPE_CHECKING:
    from assembler.agent.lifecycle import Assembly
    from assembler.manifest.model import Manifest
    from assembler.providers.base import ModelProvider
    from assembler.runner.loop import AgentRunner
    from assembler.sessions.store import Session

MODEL_ENTRY = "model"
"""The session entry a switch writes: `{"type": "model", "model": "provider:name"}`."""


def switch_model(
    manifest: Manifest,
    runner: AgentRunner,
    assembly: Assembly,
    label: str,
    env: Mapping[str, str] | None = None,
) -> tuple[ModelChoice, ModelProvider]:
    """Make `label` (`provider:name`) the model of `runner`'s next requests; the choice
    and its (untraced) provider, which the agent keeps. Raises `ConfigurationError` for
    a model `--model` would refuse (nothing changes then), `SessionError` while a run
    is in progress. `Agent.set_model` records it and closes the old provider."""
    if runner.running:
        raise SessionError("cannot switch the model while a run is in progress")
    environment = os.environ if env is None else env
    choice = check_model(manifest, label.strip(), environment)
    meter = runner.meter
    if meter.limits.cost_usd is not None and choice.price is None:
        raise ConfigurationError(
            f"{manifest.name}: a `cost_usd` budget needs the price of {choice.label}, which "
            "is not in the price table"
        )
    provider = create_model_provider(choice, environment, assembly.providers)
    telemetry = assembly.telemetry
    runner.provider = traced_provider(provider, telemetry)
    if assembly.memory is not None:  # selection and extraction ask the new model
        assembly.memory.use_model(runner.provider, choice.name)
    runner.settings = choice.settings
    runner.model_name = choice.name
    runner.label = provider.name
    runner.endpoint = shown_endpoint(choice, environment)
    runner.max_output = max_output_tokens(choice.provider, choice.name)
    window = manifest.limits.context_window or context_window(choice.provider, choice.name)
    runner.context_window = meter.context_window = window
    meter.price = choice.price
    if telemetry is not None:
        telemetry.price = choice.price
        telemetry.switch_model(
            choice.provider, choice.name, telemetry_endpoint(choice, environment)
        )
    return choice, provider


def recorded_model(session: Session, leaf: str | None = None) -> str | None:
    """The model the branch up to `leaf` (default: the session's leaf) was last
    switched to, or None when it never was (the manifest's model then)."""
    for entry in reversed(session.branch(leaf)):
        if entry.type == MODEL_ENTRY:
            model = entry.payload.get("model")
            if isinstance(model, str) and model:
                return model
    return None
