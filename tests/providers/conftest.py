"""Fixtures for provider tests: loopback servers speaking each provider's wire format.

`tests/` is put on `sys.path` so the `wire` helpers import the same way however pytest
is started (`pytest`, `python -m pytest`, one file, or with xdist).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from wire.anthropic_server import AnthropicServer  # noqa: E402
from wire.openai_server import OpenAIServer  # noqa: E402


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        yield server
