"""`--param NAME=VALUE` and `--params FILE|-`: a manifest's parameters from the command
line, for `run` and `render`.

The values are read and checked together before anything is built: a malformed pair,
an unknown name, a required parameter missing and a value that does not match its
schema are all listed in one `ParameterError`, so a person fixes the command once.
`--params` reads a JSON object (a file, or stdin with `-`); `--param` values win over
it and are read by their parameter's type (`typed.parameters.read_text_value`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from assembler.errors import ParameterError, UsageError
from assembler.manifest.model import Manifest

F = TypeVar("F", bound=Callable[..., Any])

MAX_PARAMS_BYTES = 16 * 1024 * 1024
"""The most `--params` reads: more is past what any prompt can carry."""


def param_options(function: F) -> F:
    """`--param` (repeatable) and `--params`."""
    function = click.option(
        "--params",
        "params_file",
        metavar="FILE|-",
        help="Parameter values as a JSON object, from a file or stdin (`-`).",
    )(function)
    return click.option(
        "--param",
        "param_pairs",
        multiple=True,
        metavar="NAME=VALUE",
        help="A value of one of the manifest's `parameters`, read by its type "
        '(`max_labels=2`, `tags=["a"]`). Repeatable; wins over --params.',
    )(function)


def given_params(
    manifest: Manifest, pairs: Sequence[str], file: str | None
) -> dict[str, Any] | None:
    """The values given on the command line, checked and with defaults filled in; None
    when the manifest declares no parameters and none were given. Raises one
    `ParameterError` listing every problem."""
    if not manifest.parameters and not pairs and file is None:
        return None
    from assembler.typed.parameters import Parameters

    parameters = Parameters(manifest.parameters, agent=manifest.name)
    values = read_params_file(file) if file is not None else {}
    problems: list[str] = []
    try:
        values.update(parameters.from_text(pairs))
    except ParameterError as e:
        problems.extend(e.problems)
        values.update(parameters.from_text(p for p in pairs if _readable(parameters, p)))
    try:
        bound = parameters.bind(values)
    except ParameterError as e:
        problems.extend(e.problems)
    if problems:
        raise ParameterError(problems, agent=manifest.name)
    return bound


def _readable(parameters: Any, pair: str) -> bool:
    name, equals, _ = pair.partition("=")
    return bool(equals and name in parameters.specs)


def read_params_file(file: str) -> dict[str, Any]:
    """`--params FILE|-`: a JSON object of values."""
    where = "stdin" if file == "-" else file
    try:
        if file == "-":
            data = sys.stdin.buffer.read(MAX_PARAMS_BYTES + 1)
        else:
            with Path(file).open("rb") as stream:
                data = stream.read(MAX_PARAMS_BYTES + 1)
    except OSError as e:
        raise UsageError(f"--params: cannot read {where}: {e.strerror or e}") from e
    if len(data) > MAX_PARAMS_BYTES:
        raise UsageError(f"--params: {where} holds more than {MAX_PARAMS_BYTES >> 20} MiB")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"--params: {where} is not JSON: {e}") from e
    if not isinstance(value, dict):
        raise UsageError(f"--params: {where} must hold a JSON object of NAME: VALUE")
    return value
