"""Where a built-in provider sends its requests, decided once and shown to the user.

The official SDKs read `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` on their own; the
project resolves them here instead and hands the SDK the result, so the endpoint the
banner shows, the API key rule (a server on this machine needs none) and the
token-limit field all follow the same URL. Free of imports beyond the standard
library: validation reads `BUILTIN_PROVIDERS` from here without loading any SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

from assembler.urls import is_local_url

__all__ = [
    "BASE_URL_VARIABLES",
    "BUILTIN_PROVIDERS",
    "LOCAL_SERVERS",
    "LOCAL_SERVER_STARTS",
    "OFFICIAL_BASE_URLS",
    "effective_base_url",
    "is_local_url",
    "is_official_openai",
    "unreachable_hint",
]

LOCAL_SERVERS: Mapping[str, str] = MappingProxyType(
    {
        "ollama": "http://127.0.0.1:11434/v1",
        "llamacpp": "http://127.0.0.1:8080/v1",
        "vllm": "http://127.0.0.1:8000/v1",
        "lmstudio": "http://127.0.0.1:1234/v1",
    }
)
"""Shortcuts for local OpenAI-compatible servers: `ollama:qwen2.5` means the OpenAI
provider at Ollama's default address. A manifest `base_url` overrides the address."""

LOCAL_SERVER_STARTS: Mapping[str, str] = MappingProxyType(
    {
        "ollama": "is Ollama running? `ollama serve`",
        "llamacpp": "is llama-server running? `llama-server -m MODEL.gguf --port 8080`",
        "vllm": "is vLLM running? `vllm serve MODEL`",
        "lmstudio": "is LM Studio's server running? `lms server start`",
    }
)
"""What to check when a local shortcut's server cannot be reached: the likely cause is
that it was never started, and the command that starts it."""


def unreachable_hint(provider: str, url: str | None) -> str:
    """The likely cause of "cannot reach" `url` for `provider` ("" when none is known):
    a local server not started. A remote endpoint can fail for too many reasons to
    guess one."""
    if provider in LOCAL_SERVER_STARTS:
        return LOCAL_SERVER_STARTS[provider]
    if is_local_url(url):
        return "is the server at this address running?"
    return ""


BUILTIN_PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "scripted", *LOCAL_SERVERS)
"""Every provider name that exists without an extension."""

BASE_URL_VARIABLES: Mapping[str, str] = MappingProxyType(
    {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
)
"""The environment variable each official SDK reads for its endpoint."""

OFFICIAL_BASE_URLS: Mapping[str, str] = MappingProxyType(
    {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
)
"""Where `openai` and `anthropic` go when nothing else is set (the SDKs' defaults)."""


def effective_base_url(provider: str, base_url: str | None, env: Mapping[str, str]) -> str | None:
    """The endpoint `provider` will use, or None for the vendor's official one.

    In order: the manifest's `base_url`; a local shortcut's default address;
    `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` from `env` for `openai` / `anthropic`
    (an empty variable counts as unset). A provider an extension registers gets only
    the manifest's `base_url`: what it does with the environment is its own business.
    """
    if base_url:
        return base_url
    if provider in LOCAL_SERVERS:
        return LOCAL_SERVERS[provider]
    variable = BASE_URL_VARIABLES.get(provider)
    value = env.get(variable, "").strip() if variable else ""
    return value or None


def is_official_openai(url: str | None) -> bool:
    """Whether requests go to api.openai.com (None: the SDK's default, which is it).

    Only there is the token limit sent as `max_completion_tokens`, which OpenAI's newer
    models require; compatible servers read `max_tokens`, and several ignore the other.
    """
    if not url:
        return True
    try:
        return (urlsplit(url).hostname or "").lower() == "api.openai.com"
    except ValueError:
        return False
