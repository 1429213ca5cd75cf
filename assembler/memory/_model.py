"""Side requests to the agent's model, and reading the JSON it answers with.

Selection, extraction and consolidation each ask the model one question outside the
conversation and expect JSON back. Models like to wrap JSON in a Markdown fence and
to add a sentence around it, so the first fenced block is taken when there is one;
anything else that is not valid JSON is the caller's "invalid answer", which never
changes the store and never breaks the turn.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from assembler.messages import ModelRequest, ResponseDone, TextDelta, UserMessage
from assembler.providers.base import ModelProvider

_FENCE_RE: Final = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_PREVIEW: Final = 120


async def ask_model(provider: ModelProvider, *, system: str, prompt: str, model: str = "") -> str:
    """One request with no tools and no history; the reply's text.

    `model` empty means the provider's own model, which is the agent's.
    """
    request = ModelRequest(model=model, system=system, messages=(UserMessage(prompt),))
    pieces: list[str] = []
    final: str | None = None
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            pieces.append(event.text)
        elif isinstance(event, ResponseDone):
            final = event.message.text
    return final if final is not None else "".join(pieces)


def parse_json_answer(text: str) -> Any:
    """The JSON value in a model's answer; `ValueError` (with a short reason) if none."""
    match = _FENCE_RE.search(text)
    candidate = match.group(1) if match else text
    candidate = candidate.strip()
    if not candidate:
        raise ValueError("the answer was empty")
    try:
        return json.loads(candidate)
    except json.JSONDecodeError as e:
        raise ValueError(f"the answer is not JSON ({e.msg}): {preview(text)}") from e


def preview(text: str) -> str:
    """A one-line, shortened form of a model answer for a diagnostic."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…")


def describe_error(error: BaseException) -> str:
    """`ProviderError: message`, for diagnostics about failed side requests."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
