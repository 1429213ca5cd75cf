"""How many tokens a model's context window holds, by model family, for compaction.

A default only: the manifest's `limits.context_window` wins, and a provider's overflow
error (`ContextOverflowError`) is the fallback when the figure is wrong or unknown.
Figures are each family's published window for its API; a model version that grew
past its family's figure is compacted early, never late.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["context_window"]

_FAMILIES = MappingProxyType(
    {
        # OpenAI
        "gpt-5-chat": 128_000,
        "gpt-5": 400_000,
        "gpt-4.1": 1_047_576,
        "gpt-4.5": 128_000,
        "gpt-4o": 128_000,
        "chatgpt-4o": 128_000,
        "gpt-4-turbo": 128_000,
        "gpt-4-32k": 32_768,
        "gpt-4": 8_192,
        "gpt-3.5-turbo": 16_385,
        "o1-preview": 128_000,
        "o1-mini": 128_000,
        "o1": 200_000,
        "o3": 200_000,
        "o4-mini": 200_000,
        # Anthropic
        "claude-3": 200_000,
        "claude-opus-4": 200_000,
        "claude-sonnet-4": 200_000,
        "claude-haiku-4": 200_000,
        "claude-4": 200_000,
        # open-weight families, as served by vLLM, OpenRouter, Groq, ...
        "llama3.1": 131_072,
        "llama3.2": 131_072,
        "llama3.3": 131_072,
        "llama-3.1": 131_072,
        "llama-3.2": 131_072,
        "llama-3.3": 131_072,
        "meta-llama-3.1": 131_072,
        "llama3": 8_192,
        "llama-3": 8_192,
        "meta-llama-3": 8_192,
        "qwen2.5": 32_768,
        "qwen3": 32_768,
        "mistral-large": 131_072,
        "mistral-nemo": 131_072,
        "mistral": 32_768,
        "mixtral": 32_768,
        "gemma3": 131_072,
        "gemma-3": 131_072,
        "gemma2": 8_192,
        "gemma-2": 8_192,
        "deepseek-chat": 131_072,
        "deepseek-reasoner": 131_072,
        "deepseek-r1": 131_072,
        "deepseek-v3": 131_072,
        "smollm2": 8_192,
    }
)
_LONGEST_FIRST = sorted(_FAMILIES, key=len, reverse=True)
_BOUNDARY = frozenset("-:._@ ")

_SERVER_SETS_THE_WINDOW = frozenset({"ollama", "llamacpp", "lmstudio"})
"""Local servers that run every model with their own, usually small, context size
(`num_ctx`, `-c`, the load settings): the family's figure would be wrong there."""


def context_window(provider: str, model: str) -> int | None:
    """The context window of `model`, in tokens, or None when it is not known.

    Matched by family prefix on the model name, after any `vendor/` path
    (`anthropic/claude-3.5-sonnet`, `meta-llama/Llama-3.1-8B-Instruct`): `gpt-4o-mini`
    is `gpt-4o`, `claude-sonnet-4-5` is `claude-sonnet-4`, `qwen2.5:7b` is `qwen2.5`.
    None for the `scripted` provider and for `ollama`, `llamacpp` and `lmstudio`, whose
    window is the server's setting rather than the model's.
    """
    if provider == "scripted" or provider in _SERVER_SETS_THE_WINDOW:
        return None
    name = model.strip().lower().rsplit("/", 1)[-1]
    for family in _LONGEST_FIRST:
        if name.startswith(family) and (len(name) == len(family) or name[len(family)] in _BOUNDARY):
            return _FAMILIES[family]
    return None
