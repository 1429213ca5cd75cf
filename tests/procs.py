"""Finding processes by a marker, to prove a test left none behind (Linux /proc).

A test gives the processes it starts a unique marker (an odd `sleep` duration, an
environment variable) and checks afterwards that no live process carries it.
"""

from __future__ import annotations

import os
from pathlib import Path


def live_processes_with(marker: str, *, where: str = "cmdline") -> list[int]:
    """Pids of live (not zombie) processes whose command line (arguments joined by
    spaces), or environment with `where="environ"`, contains `marker`; never this
    process."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            text = Path(f"/proc/{name}/{where}").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in text and state not in (b"Z", b"X"):
            found.append(int(name))
    return found
