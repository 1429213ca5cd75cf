"""Shared fixtures: no accidental network, no writes outside tmp, real loopback servers.

Every test runs with its own config, data and cache directories (so trust decisions,
session files and kept indexes never touch the developer's), without provider API keys, and with
outbound connections to anything but the loopback interface refused, the way
openai-agents blocks real model clients in its tests.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from wire.anthropic_server import AnthropicServer
from wire.openai_server import OpenAIServer

REPO = Path(__file__).resolve().parents[1]

# Property tests explore with a fixed seed in the suite, so a run is repeatable and CI
# is not flaky; `HYPOTHESIS_PROFILE=explore` searches afresh (and found real bugs).
settings.register_profile("suite", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

_SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
_USER_DEFAULTS = ("ASSEMBLER_MODEL",)  # the developer's own default model


def _is_local(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX
        return True
    host = address[0] if isinstance(address, tuple) and address else ""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise ConnectionRefusedError(f"tests may not reach the network ({address!r})")
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise ConnectionRefusedError(f"tests may not reach the network ({address!r})")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("ASSEMBLER_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("ASSEMBLER_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("ASSEMBLER_CACHE_DIR", str(home / "cache"))
    for name in (*_SECRETS, *_USER_DEFAULTS):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shipping(tmp_path: Path) -> Path:
    """A private copy of `agents/`, `examples/` and `evals/`, so a run may edit the example."""
    root = tmp_path / "project"
    for name in ("agents", "examples", "schemas", "evals"):
        shutil.copytree(
            REPO / name, root / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        yield server
