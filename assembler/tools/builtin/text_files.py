"""Reading workspace files as text, with the refusals the file tools share.

Binary detection is the heuristic git and grep use: a NUL byte near the start. It is
cheap, needs no dependency, and text in any ASCII-compatible encoding passes it.
"""

from __future__ import annotations

from pathlib import Path

from assembler.errors import ToolError

BINARY_SAMPLE_BYTES = 8192


def looks_binary(sample: bytes) -> bool:
    """Whether bytes from the start of a file look like a binary format."""
    return b"\x00" in sample[:BINARY_SAMPLE_BYTES]


def read_bytes_checked(path: Path, shown: str) -> bytes:
    """The bytes of a regular text file, or a `ToolError` saying why not."""
    if not path.exists():
        raise ToolError(f"{shown}: no such file")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use `ls` to list it")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file")
    data = path.read_bytes()
    if looks_binary(data):
        raise ToolError(f"{shown} looks like a binary file ({len(data)} bytes); not shown")
    return data


def read_text_lossy(path: Path, shown: str) -> str:
    """The file decoded as UTF-8; undecodable bytes become U+FFFD (fine for reading)."""
    return read_bytes_checked(path, shown).decode("utf-8", "replace")


def read_text_exact(path: Path, shown: str) -> str:
    """The file decoded strictly, so encoding it again gives back the same bytes.

    `edit` needs this: a lossy decode would silently rewrite bytes it did not touch.
    """
    data = read_bytes_checked(path, shown)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); it cannot be edited as text"
        ) from exc
