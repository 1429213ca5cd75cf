"""The user's own defaults: today, the model of a manifest that names none.

A person who always runs against the same local server (or the same API) should not
have to write `model:` into every manifest or pass `--model` every time; a manifest
without `model:` then uses, in this order, `ASSEMBLER_MODEL` or `model:` in the user's
config file `<config dir>/config.yaml` (`$ASSEMBLER_CONFIG_DIR`, else
`$XDG_CONFIG_HOME/agent-assembler`, else `~/.config/agent-assembler`). A manifest's own
`model:` and `--model` come first.

The file belongs to the user, never to a project: nothing in a repository can choose
it, so it needs no trust. It is read only when a manifest has no model, with the same
care as any small file (a bounded read, safe YAML); a broken one is a usage error
naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from assembler.errors import ConfigurationError
from assembler.safe_read import FileRefused, read_small_text
from assembler.user_dirs import default_config_dir

MODEL_VARIABLE = "ASSEMBLER_MODEL"
CONFIG_FILE = "config.yaml"
KEYS = ("model",)
MAX_CONFIG_BYTES = 64 * 1024


@dataclass(frozen=True)
class DefaultModel:
    """A `provider:name` the user chose, and where (for messages)."""

    value: str
    source: str


def config_file() -> Path:
    return default_config_dir() / CONFIG_FILE


def default_model(env: Mapping[str, str]) -> DefaultModel | None:
    """`ASSEMBLER_MODEL`, else the config file's `model:`, else None."""
    value = env.get(MODEL_VARIABLE, "").strip()
    if value:
        return DefaultModel(value, MODEL_VARIABLE)
    path = config_file()
    configured = read_config(path).get("model")
    if configured is None:
        return None
    if not isinstance(configured, str) or not configured.strip():
        raise ConfigurationError(f"{path}: `model` must be a string, provider:name")
    return DefaultModel(configured.strip(), str(path))


def read_config(path: Path) -> dict[str, object]:
    """The config file as a mapping; empty when there is none."""
    try:
        text = read_small_text(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return {}
    except (FileRefused, OSError) as e:
        raise ConfigurationError(f"cannot read {path}: {e}") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or "cannot be parsed"
        raise ConfigurationError(f"{path}{where}: not valid YAML: {problem}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected a mapping such as `model: openai:gpt-4o`")
    unknown = sorted(str(key) for key in data if key not in KEYS)
    if unknown:
        raise ConfigurationError(
            f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}"
        )
    return {str(key): value for key, value in data.items()}
