"""What a model family holds and writes: its context window and its longest reply.

Defaults only. The manifest's `limits.context_window` and `model.max_tokens` win, and a
provider's overflow error (`ContextOverflowError`) is the fallback when a window figure
is wrong or unknown. Figures are each family's published limits for its API; a model
version that grew past its family's figure is compacted early, never late, and a reply
limit that is too small is met by the runner's one retry with a larger limit.

The reply limit matters: a flat 4,096 cuts a long `write` mid-argument on a model that
could write 64,000 tokens. Where a family's limit is not known, `max_output_tokens` is
None and the server decides (the Anthropic provider then sends its own default, since
the Messages API requires one).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

__all__ = ["ModelLimits", "context_window", "max_output_tokens", "model_limits"]


class ModelLimits(NamedTuple):
    """A family's context window and longest reply, in tokens (None: not known)."""

    window: int
    max_output: int | None = None


_FAMILIES = MappingProxyType(
    {
        # OpenAI
        "gpt-5-chat": ModelLimits(128_000, 16_384),
        "gpt-5": ModelLimits(400_000, 128_000),
        "gpt-4.1": ModelLimits(1_047_576, 32_768),
        "gpt-4.5": ModelLimits(128_000, 16_384),
        "gpt-4o": ModelLimits(128_000, 16_384),
        "chatgpt-4o": ModelLimits(128_000, 16_384),
        "gpt-4-turbo": ModelLimits(128_000, 4_096),
        "gpt-4-32k": ModelLimits(32_768, 4_096),
        "gpt-4": ModelLimits(8_192, 8_192),
        "gpt-3.5-turbo": ModelLimits(16_385, 4_096),
        "o1-preview": ModelLimits(128_000, 32_768),
        "o1-mini": ModelLimits(128_000, 65_536),
        "o1": ModelLimits(200_000, 100_000),
        "o3": ModelLimits(200_000, 100_000),
        "o4-mini": ModelLimits(200_000, 100_000),
        # Anthropic
        "claude-3-5-sonnet": ModelLimits(200_000, 8_192),
        "claude-3-5-haiku": ModelLimits(200_000, 8_192),
        "claude-3.5-sonnet": ModelLimits(200_000, 8_192),
        "claude-3.5-haiku": ModelLimits(200_000, 8_192),
        "claude-3-7-sonnet": ModelLimits(200_000, 64_000),
        "claude-3.7-sonnet": ModelLimits(200_000, 64_000),
        "claude-3": ModelLimits(200_000, 4_096),
        "claude-opus-4-5": ModelLimits(200_000, 64_000),
        "claude-opus-4": ModelLimits(200_000, 32_000),
        "claude-sonnet-4": ModelLimits(200_000, 64_000),
        "claude-haiku-4": ModelLimits(200_000, 64_000),
        "claude-4": ModelLimits(200_000, 32_000),
        # open-weight families, as served by vLLM, OpenRouter, Groq, ...
        "llama3.1": ModelLimits(131_072),
        "llama3.2": ModelLimits(131_072),
        "llama3.3": ModelLimits(131_072),
        "llama-3.1": ModelLimits(131_072),
        "llama-3.2": ModelLimits(131_072),
        "llama-3.3": ModelLimits(131_072),
        "meta-llama-3.1": ModelLimits(131_072),
        "llama3": ModelLimits(8_192),
        "llama-3": ModelLimits(8_192),
        "meta-llama-3": ModelLimits(8_192),
        "qwen2.5": ModelLimits(32_768),
        "qwen3": ModelLimits(32_768),
        "mistral-large": ModelLimits(131_072),
        "mistral-nemo": ModelLimits(131_072),
        "mistral": ModelLimits(32_768),
        "mixtral": ModelLimits(32_768),
        "gemma3": ModelLimits(131_072),
        "gemma-3": ModelLimits(131_072),
        "gemma2": ModelLimits(8_192),
        "gemma-2": ModelLimits(8_192),
        "deepseek-chat": ModelLimits(131_072, 8_192),
        "deepseek-reasoner": ModelLimits(131_072, 65_536),
        "deepseek-r1": ModelLimits(131_072),
        "deepseek-v3": ModelLimits(131_072),
        "smollm2": ModelLimits(8_192),
    }
)
_LONGEST_FIRST = sorted(_FAMILIES, key=len, reverse=True)
_BOUNDARY = frozenset("-:._@ ")

_SERVER_SETS_THE_WINDOW = frozenset({"ollama", "llamacpp", "lmstudio"})
"""Local servers that run every model with their own, usually small, context size
(`num_ctx`, `-c`, the load settings): the family's figure would be wrong there."""


def family(model: str) -> str | None:
    """The family `model` belongs to, by prefix after any `vendor/` path
    (`anthropic/claude-3.5-sonnet`, `meta-llama/Llama-3.1-8B-Instruct`): `gpt-4o-mini`
    is `gpt-4o`, `claude-sonnet-4-5` is `claude-sonnet-4`, `qwen2.5:7b` is `qwen2.5`."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    for candidate in _LONGEST_FIRST:
        if name.startswith(candidate) and (
            len(name) == len(candidate) or name[len(candidate)] in _BOUNDARY
        ):
            return candidate
    return None


def model_limits(provider: str, model: str) -> ModelLimits | None:
    """The family limits of `model`, or None when unknown (and for `scripted`)."""
    if provider == "scripted":
        return None
    found = family(model)
    return _FAMILIES[found] if found is not None else None


def context_window(provider: str, model: str) -> int | None:
    """The context window of `model`, in tokens, or None when it is not known.

    None for the `scripted` provider and for `ollama`, `llamacpp` and `lmstudio`, whose
    window is the server's setting rather than the model's.
    """
    if provider in _SERVER_SETS_THE_WINDOW:
        return None
    limits = model_limits(provider, model)
    return limits.window if limits is not None else None


def max_output_tokens(provider: str, model: str) -> int | None:
    """The longest reply `model` may write, in tokens, or None when not known (then
    the server's own default applies)."""
    limits = model_limits(provider, model)
    return limits.max_output if limits is not None else None
