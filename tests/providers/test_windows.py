"""`context_window(provider, model)`: a default per model family, None when unknown."""

from __future__ import annotations

import pytest

from assembler.providers.windows import context_window


@pytest.mark.parametrize(
    ("provider", "model", "window"),
    [
        ("openai", "gpt-4o", 128_000),
        ("openai", "gpt-4o-mini-2024-07-18", 128_000),
        ("openai", "gpt-4.1-mini", 1_047_576),
        ("openai", "gpt-4-0613", 8_192),
        ("openai", "gpt-4-turbo", 128_000),
        ("openai", "gpt-5", 400_000),
        ("openai", "gpt-5-mini", 400_000),
        ("openai", "gpt-5-chat-latest", 128_000),
        ("openai", "o1", 200_000),
        ("openai", "o1-mini", 128_000),
        ("openai", "o3-mini", 200_000),
        ("openai", "o4-mini", 200_000),
        ("anthropic", "claude-3-5-sonnet-20241022", 200_000),
        ("anthropic", "claude-3-haiku-20240307", 200_000),
        ("anthropic", "claude-sonnet-4-5", 200_000),
        ("anthropic", "claude-opus-4-1", 200_000),
        ("openai", "anthropic/claude-3.5-sonnet", 200_000),  # OpenRouter's vendor/ form
        ("vllm", "meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("vllm", "meta-llama/Meta-Llama-3-8B-Instruct", 8_192),
        ("openai", "llama3.1:8b", 131_072),
        ("vllm", "Qwen/Qwen2.5-7B-Instruct", 32_768),
        ("openai", "qwen2.5-coder:7b", 32_768),
        ("openai", "deepseek-chat", 131_072),
    ],
)
def test_known_families(provider: str, model: str, window: int) -> None:
    assert context_window(provider, model) == window


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "my-finetune"),
        ("openai", "gpt-4oops"),  # a prefix is not a family
        ("openai", "o10"),
        ("scripted", "gpt-4o"),
        ("ollama", "llama3.1:8b"),  # the server's num_ctx decides, not the model
        ("llamacpp", "qwen2.5"),
        ("lmstudio", "qwen2.5"),
        ("echo", ""),
    ],
)
def test_unknown_is_none(provider: str, model: str) -> None:
    assert context_window(provider, model) is None
