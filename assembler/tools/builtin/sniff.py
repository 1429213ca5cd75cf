"""Telling text files from binary ones, the way git and grep do.

The heuristic is a NUL byte near the start: cheap, no dependency, and text in any
ASCII-compatible encoding passes it. Standard library only, for the search worker.
"""

from __future__ import annotations

BINARY_SAMPLE_BYTES = 8192


def looks_binary(sample: bytes) -> bool:
    """Whether bytes from the start of a file look like a binary format."""
    return b"\x00" in sample[:BINARY_SAMPLE_BYTES]
