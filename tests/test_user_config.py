"""The user's default model: `ASSEMBLER_MODEL`, else `model:` in the user's config file,
for manifests without `model:`; a broken config file is a usage error naming it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.errors import ConfigurationError, UsageError
from assembler.user_config import config_file, default_model


@pytest.fixture
def config() -> Path:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_no_variable_and_no_file_is_no_default() -> None:
    assert not config_file().exists()
    assert default_model({}) is None


def test_the_file_gives_the_default_and_the_variable_wins(config: Path) -> None:
    assert config == Path(os.environ["ASSEMBLER_CONFIG_DIR"]) / "config.yaml"
    config.write_text("model: ollama:qwen3\n")
    found = default_model({})
    assert found is not None and (found.value, found.source) == ("ollama:qwen3", str(config))
    found = default_model({"ASSEMBLER_MODEL": " openai:gpt-4o "})
    assert found is not None and (found.value, found.source) == ("openai:gpt-4o", "ASSEMBLER_MODEL")
    config.write_text("# nothing set yet\n")
    assert default_model({}) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model: [a, b]\n", "`model` must be a string"),
        ("- model\n", "expected a mapping"),
        ("modle: openai:gpt-4o\n", "unknown key(s) modle; known: model"),
        ("model: 'unclosed\n", "config.yaml:2:1: not valid YAML: found unexpected end of stream"),
    ],
)
def test_a_broken_file_is_a_usage_error_naming_it(config: Path, text: str, message: str) -> None:
    config.write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        default_model({})
    assert isinstance(caught.value, UsageError)
    assert str(config) in str(caught.value) and message in str(caught.value)


def test_a_file_that_is_not_a_small_regular_file_is_refused(config: Path) -> None:
    config.mkdir()
    with pytest.raises(ConfigurationError, match="it is a directory"):
        default_model({})
