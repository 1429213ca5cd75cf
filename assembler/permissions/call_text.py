"""A tool call as whoever approves it reads it: every argument, every line, in full.

The terminal, RPC and ACP show this same text before an `ask` is answered. Nothing is
cut or folded: a command that hides `curl ... | sh` after two hundred harmless lines
must show that line to the person deciding (long text is paged at the terminal, not
shortened). Multi-line values are shown in a `|` gutter, one line per line, so where
a value starts and ends, blank lines and trailing spaces included, can be seen.
Making the text safe for a terminal is the terminal's job (`terminal_safe`); RPC and
ACP clients get it as data.
"""

from __future__ import annotations

import json

from assembler.messages import ToolCall

GUTTER = "  | "


def call_text(call: ToolCall) -> str:
    """`bash: git push`, or the tool's name and each argument on lines of its own."""
    arguments = call.arguments
    if arguments is None:
        return "\n".join(
            [f"{call.name} (arguments that are not valid JSON, as the model wrote them):"]
            + [GUTTER + line for line in _lines(call.raw_arguments)]
        )
    values = list(arguments.items())
    if len(values) == 1 and _one_line(values[0][1]):
        return f"{call.name}: {values[0][1]}"
    lines = [f"{call.name}:"]
    for key, value in values:
        if _one_line(value):
            lines.append(f"  {key}: {value}")
        elif isinstance(value, str):
            lines.append(f"  {key}:")
            lines.extend(GUTTER + line for line in _lines(value))
        else:
            lines.append(f"  {key}: {json.dumps(value, ensure_ascii=False, default=str)}")
    return "\n".join(lines)


def _one_line(value: object) -> bool:
    return (
        isinstance(value, str)
        and value != ""
        and value == value.strip()
        and "\n" not in value
        and "\r" not in value
    )


def _lines(text: str) -> list[str]:
    """Every line of `text`, a final empty line included (`a\\n` is `a` and ``)."""
    return text.replace("\r\n", "\n").split("\n")
