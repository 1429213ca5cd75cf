"""`@path` mentions (`cli/mentions.py`): which words are mentions, and attaching files
through the `read` tool's rules, a `deny` rule included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assembler.cli.mentions import mentioned


def test_which_words_name_workspace_files(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "a.py").write_text("")
    (work / "src" / "b.py").write_text("")
    (tmp_path / "outside.txt").write_text("")
    text = (
        "see @a.py, then @src/b.py. mail me@a.py or @alice; not @../outside.txt "
        "nor @src nor @/etc/passwd; @a.py again"
    )
    assert mentioned(text, work) == ["a.py", "src/b.py"]


def test_a_denied_file_is_not_attached(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "open.txt").write_text("open text\n")
    (work / "secret.txt").write_text("s3cret\n")
    (tmp_path / "reply.yaml").write_text("- text: Read them.\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: chat\nidentity: You help.\nworkspace: work\n"
        "model: scripted:reply.yaml\ntools: {sets: [readonly]}\n"
        "permissions:\n  deny: ['read(secret.txt)']\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(tmp_path / "agent.yaml")],
        input="compare @open.txt with @secret.txt\n/exit\n",
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "error: not attached: @secret.txt: " in done.stderr
    assert "(attached open.txt)" in done.stderr
    folder = Path(os.environ["ASSEMBLER_DATA_DIR"]) / "sessions" / "chat"
    (path,) = (p for p in folder.glob("*.jsonl") if not p.name.endswith(".trace.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    (sent,) = [
        r["message"]["content"]
        for r in records
        if r.get("type") == "message" and r["message"]["role"] == "user"
    ]
    assert sent.startswith('compare @open.txt with @secret.txt\n\n<context source="open.txt">')
    assert "open text" in sent and "s3cret" not in sent
