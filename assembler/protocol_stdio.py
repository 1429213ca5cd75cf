"""A protocol's own stdin and stdout, and nothing else on them (`assemble rpc`, `acp`).

Both protocols are messages on the assembler's stdin and stdout: one stray byte on
stdout (a `print()` in an extension, a C library's message, a child process that
inherits the descriptor) breaks the client's parser, and a child that reads stdin
steals requests. Redirecting Python's `sys.stdout` does not reach any of those but the
first. `claim_stdio` therefore takes both descriptors for the protocol before anything
else runs: it keeps duplicates of them (not inherited by child processes) for the
protocol, points descriptor 1 at stderr and descriptor 0 at `/dev/null`. Everything
that is not protocol then lands on stderr, where clients show it as the agent's log,
whoever wrote it and however, and whatever reads stdin reads nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class ProtocolFiles:
    """The descriptors the protocol reads from and writes to."""

    input: int
    output: int


def claim_stdio() -> ProtocolFiles:
    """Keep stdin and stdout for the protocol; from now on descriptor 1 is stderr and
    descriptor 0 reads nothing."""
    sys.stdout.flush()
    files = ProtocolFiles(os.dup(0), os.dup(1))
    os.set_inheritable(files.input, False)
    os.set_inheritable(files.output, False)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return files
