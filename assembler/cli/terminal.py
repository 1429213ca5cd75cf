"""What goes to a terminal: text from others, escaped unless it goes to a file or pipe.

Kept apart from `display` (which knows the run's events) so that commands that print
a prompt or a record (`render`, `memory show`) do not import the runner.
"""

from __future__ import annotations

import sys

from assembler.text import terminal_safe, terminal_safe_json


def for_stdout(text: str, *, json_text: bool = False) -> str:
    """`text` as it should go to stdout: unchanged when stdout is a file or a pipe
    (a prompt snapshot, a record, byte for byte), escaped when it is a terminal,
    which would act on control characters (JSON the JSON way, `json_text`)."""
    if not sys.stdout.isatty():
        return text
    return terminal_safe_json(text) if json_text else terminal_safe(text)
