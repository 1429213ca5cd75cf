"""Hints for the mistakes people make in their first manifest.

The schema's own message says what is wrong; a hint says what was probably meant,
for mistakes common enough to recognise: the instructions under another agent
framework's key (`instructions:`, `system_prompt:`), a model written the LiteLLM or
OpenRouter way (`openai/gpt-4o`), tool sets written as a list where a mapping with
`sets` belongs, and a tab in the indentation (which YAML does not allow).
"""

from __future__ import annotations

from typing import Any

JsonPath = tuple[str | int, ...]  # as in `yaml_source`, which imports this module

#: Keys other agent frameworks use for what this manifest calls `identity`.
IDENTITY_ALIASES = frozenset(
    {
        "instruction", "instructions", "system_prompt", "system", "system_message",
        "prompt_template", "persona", "role", "backstory", "goal", "description_prompt",
    }
)  # fmt: skip

#: Providers a `provider/name` model string most likely meant.
KNOWN_PROVIDERS = ("openai", "anthropic", "scripted")


def unknown_key_hint(path: JsonPath, key: str) -> str | None:
    """`; did you mean ...?` for an unknown key, when the key is a known alias."""
    if not path and key.lower() in IDENTITY_ALIASES:
        return (
            "; did you mean `identity`? (the agent's instructions, the body of the "
            "prompt's `## identity` section)"
        )
    return None


def model_hint(value: Any) -> str:
    """For a model string that is not `provider:name`."""
    if not isinstance(value, str) or ":" in value:
        return ""
    provider, slash, name = value.partition("/")
    if slash and provider in KNOWN_PROVIDERS and name:
        return f"; did you mean `{provider}:{name}`?"
    if slash:  # an OpenRouter or vLLM model id: the name itself holds `/`
        return f"; a model name with `/` goes after the provider: `openai:{value}`"
    if not value or any(c.isspace() for c in value):
        return ""
    guess = "anthropic" if value.startswith("claude") else "openai"
    return f"; did you mean `{guess}:{value}`?"


def tools_hint(path: JsonPath, value: Any) -> str:
    """For `tools: [readonly]`: the sets belong under `tools.sets`."""
    if path != ("tools",) or not isinstance(value, list):
        return ""
    names = [item for item in value if isinstance(item, str)]
    shown = f"[{', '.join(names)}]" if names and len(names) == len(value) else "[...]"
    return f"; tool sets go under `sets`: `tools: {{sets: {shown}}}`"


def tab_hint(text: str, line: int, line_offset: int = 0) -> str:
    """For a YAML syntax error on a line (1-based, in the file) indented with a tab."""
    lines = text.splitlines()
    index = line - 1 - line_offset
    if 0 <= index < len(lines):
        content = lines[index]
        indentation = content[: len(content) - len(content.lstrip(" \t"))]
        if "\t" in indentation:
            return "; YAML does not allow tabs for indentation: indent with spaces"
    return ""
