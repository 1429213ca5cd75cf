"""Issue 20, item 18: `assemble rpc`'s stdout carries protocol messages only.

The server redirected Python's `sys.stdout` only: a tool that wrote to descriptor 1,
a command it started (which inherits the descriptor) or a C library's message went
straight into the client's stream of JSON lines and broke its parser, and a command
that read stdin could take the client's requests. Like `assemble acp`, the server now
keeps the two descriptors for the protocol and points 1 at stderr and 0 at
`/dev/null`, so whatever else runs writes to stderr and reads nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

NOISY = '''\
import os
import subprocess
import sys

os.write(1, b"NOISE-AT-IMPORT\\n")


def shout(text: str) -> str:
    """Say it louder, noisily."""
    print("NOISE-PRINT")
    sys.stdout.flush()
    os.system("echo NOISE-SHELL")
    os.write(1, b"NOISE-FD\\n")
    taken = subprocess.run(["head", "-c", "4096"], capture_output=False, stdout=subprocess.PIPE)
    return text.upper() + " took " + repr(taken.stdout.decode())
'''

REQUESTS = [
    {"id": 1, "method": "prompt", "params": {"text": "Shout."}},
    {"id": 2, "method": "state"},
    {"id": 3, "method": "shutdown"},
]


def test_nothing_but_the_protocol_reaches_stdout(tmp_path: Path) -> None:
    (tmp_path / "noisy.py").write_text(NOISY)
    (tmp_path / "reply.yaml").write_text(
        "- tool_calls: [{name: shout, arguments: {text: hi}}]\n- text: Loud.\n"
    )
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: noisy\nidentity: You help.\nmodel: scripted:reply.yaml\n"
        "tools:\n  sets:\n    - python:\n        - function: noisy:shout\n"
    )
    # All requests at once: a command that reads stdin would find the later ones there.
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "rpc", "agent.yaml", "--trust", "--no-session"],
        input="".join(json.dumps(r) + "\n" for r in REQUESTS),
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    assert all(isinstance(r, dict) and "id" in r for r in replies), done.stdout
    finals = {r["id"]: r for r in replies if "result" in r or "error" in r}
    assert set(finals) == {1, 2, 3}, done.stdout
    assert finals[1]["result"]["reason"] == "completed"
    [result] = [r["event"] for r in replies if r.get("event", {}).get("type") == "tool_result"]
    assert result["content"] == "HI took ''"  # stdin read nothing: the requests stayed ours
    for noise in ("NOISE-AT-IMPORT", "NOISE-PRINT", "NOISE-SHELL", "NOISE-FD"):
        assert noise not in done.stdout
        assert noise in done.stderr
