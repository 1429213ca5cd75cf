"""Which project directories the user trusts to run their code.

Project code (extension files, Python tools that live in the project, MCP stdio
commands a project manifest declares) runs only in a trusted directory. Trust is the
user's decision, stored outside any project (`<config dir>/trust.json`), keyed by the
resolved directory; a manifest cannot grant it, and a checkout cannot ship it.
Trusting a directory trusts everything beneath it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assembler.errors import TrustError
from assembler.files import atomic_write
from assembler.sessions.paths import default_config_dir

TRUST_FILE = "trust.json"


@dataclass(frozen=True)
class TrustedDirectory:
    path: Path
    added: str


class TrustStore:
    """The user's list of trusted directories."""

    def __init__(self, config_dir: Path | None = None) -> None:
        self.file = (config_dir or default_config_dir()) / TRUST_FILE

    def entries(self) -> list[TrustedDirectory]:
        try:
            raw = json.loads(self.file.read_text("utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            raise TrustError(f"cannot read the trust store {self.file}: {e}") from e
        items = raw.get("trusted", []) if isinstance(raw, dict) else []
        return [
            TrustedDirectory(Path(item["path"]), str(item.get("added", "")))
            for item in items
            if isinstance(item, dict) and isinstance(item.get("path"), str)
        ]

    def is_trusted(self, directory: Path) -> bool:
        target = directory.resolve()
        return any(target.is_relative_to(entry.path) for entry in self.entries())

    def add(self, directory: Path) -> Path:
        target = directory.resolve()
        if not target.is_dir():
            raise TrustError(f"{directory} is not a directory")
        entries = [e for e in self.entries() if e.path != target]
        entries.append(TrustedDirectory(target, datetime.now(UTC).isoformat(timespec="seconds")))
        self._write(entries)
        return target

    def remove(self, directory: Path) -> bool:
        target = directory.resolve()
        entries = self.entries()
        kept = [e for e in entries if e.path != target]
        if len(kept) == len(entries):
            return False
        self._write(kept)
        return True

    def _write(self, entries: list[TrustedDirectory]) -> None:
        payload = {"trusted": [{"path": str(e.path), "added": e.added} for e in entries]}
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.file, (json.dumps(payload, indent=2) + "\n").encode("utf-8"))
        except OSError as e:
            raise TrustError(f"cannot write the trust store {self.file}: {e}") from e
