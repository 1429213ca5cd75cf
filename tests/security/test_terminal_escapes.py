"""Issue 11, item 21: text from a model, a tool, a memory record or a session never
reaches the terminal raw.

The attack: model text and tool output carrying OSC 52 (write the clipboard), OSC 0
(set the window title), CSI 2J (clear the screen), SGR 8 (hidden text), 8-bit CSI and
bidi overrides passed straight through `run` and `assemble trace`. Now every human-
readable output shows such characters escaped (`\\x1b`, `\\u202e`), and JSON output
escapes them the JSON way, so the data reads back unchanged.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from clirun import Outcome, assemble

from assembler.text import terminal_safe

# What must never reach a terminal raw: C0 controls but tab and newline, DEL, C1,
# and the bidi embeddings, overrides and isolates (written out here on purpose,
# independent of the implementation).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

HOSTILE = (
    "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: put text on the clipboard
    "\x1b]0;pwned\x07"  # OSC 0: the window title
    "\x1b[2J"  # clear the screen
    "\x1b[8mhidden\x1b[0m"  # concealed text
    "\x9b31m"  # 8-bit CSI
    "\u202eevil\u202c"  # right-to-left override
    "back\x08\x7f"  # backspace, DEL
    "over\rwrite"  # a lone carriage return
)
VISIBLE = ("\\x1b]52;c;", "\\x1b]0;pwned\\x07", "\\x1b[2J", "\\x9b31m", "\\u202e", "\\r")


def assert_safe(*texts: str) -> None:
    for text in texts:
        assert not UNSAFE.search(text), repr(UNSAFE.findall(text))


def project(tmp_path: Path, script: str, *, extra: str = "") -> tuple[Path, Path]:
    """A manifest reading files in `ws/`, and a scripted model's script."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text(f"first line {HOSTILE}\nsecond\n")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: hostile\nidentity: Test agent.\nworkspace: ws\n"
        "tools:\n  sets:\n    - builtin: [read]\n" + extra
    )
    script_path = tmp_path / "script.yaml"
    script_path.write_text(textwrap.dedent(script))
    return manifest, script_path


# The hostile text as a YAML double-quoted scalar (json.dumps escapes it, and JSON
# strings are YAML double-quoted strings).
Y = json.dumps(HOSTILE)

SCRIPT = f"""\
- text: {Y}
  tool_calls:
    - {{name: read, arguments: {{path: notes.txt}}}}
    - {{name: read, arguments: {{path: {json.dumps("gone" + HOSTILE)}}}}}
- text: {json.dumps("answer " + HOSTILE)}
"""


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> Outcome:
    manifest, script = project(tmp_path, SCRIPT)
    return assemble(
        capsys, "run", str(manifest), "--model", f"scripted:{script}", "--trust",
        "--session-dir", str(tmp_path / "sessions"), *args,
    )  # fmt: skip


def test_the_sanitiser_escapes_every_control_and_keeps_text() -> None:
    shown = terminal_safe(HOSTILE)
    assert_safe(shown)
    for visible in VISIBLE:
        assert visible in shown
    assert terminal_safe("tab\tnewline\nCRLF\r\nünïcødé 日本 👨‍👩‍👧") == (
        "tab\tnewline\nCRLF\r\nünïcødé 日本 👨‍👩‍👧"
    )
    assert terminal_safe("\U000e0041\ud800") == "\\U000e0041\\ud800"  # tag char, lone surrogate


def test_run_shows_model_text_and_tool_output_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outcome = run(capsys, tmp_path, "-p", "go")
    assert outcome.code == 0, outcome.err
    assert_safe(outcome.out, outcome.err)
    assert outcome.out.startswith("answer \\x1b]52;c;")
    assert "\\x1b]0;pwned\\x07" in outcome.err  # the narration, on stderr
    assert "first line \\x1b]52;c;" in outcome.err  # the tool's output
    assert "gone\\x1b]52;c;" in outcome.err  # the proposed arguments


def test_interactive_run_streams_escaped_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("go\n/exit\n"))
    outcome = run(capsys, tmp_path)
    assert outcome.code == 0, outcome.err
    assert_safe(outcome.out, outcome.err)
    for visible in VISIBLE:
        assert visible in outcome.out


def test_run_json_escapes_the_json_way_and_reads_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outcome = run(capsys, tmp_path, "-p", "go", "--json")
    assert outcome.code == 0, outcome.err
    assert_safe(outcome.out, outcome.err)
    events = [json.loads(line) for line in outcome.out.splitlines()]
    texts = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert texts == HOSTILE + "answer " + HOSTILE
    results = [e["content"] for e in events if e["type"] == "tool_result"]
    assert HOSTILE in results[0]


def test_trace_shows_the_session_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert run(capsys, tmp_path, "-p", "go").code == 0
    sessions = str(tmp_path / "sessions")
    shown = assemble(capsys, "trace", "--session-dir", sessions)
    assert shown.code == 0, shown.err
    assert_safe(shown.out, shown.err)
    assert "raw result: first line \\x1b]52;c;" in shown.out
    assert "gone\\x1b]52;c;" in shown.out
    raw = assemble(capsys, "trace", "--session-dir", sessions, "--json")
    assert_safe(raw.out, raw.err)
    records = [json.loads(line) for line in raw.out.splitlines()]
    assert records[1]["proposed"]["arguments"] == {"path": "gone" + HOSTILE}
    assert HOSTILE in records[0]["raw_result"]["content"]


def test_an_error_message_carrying_tool_output_is_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An extension's failure message quotes what it was given: still escaped."""
    (tmp_path / "ext.py").write_text(
        "def setup(api, options):\n"
        "    @api.on('tool_result')\n"
        "    def broken(event):\n"
        "        raise ValueError(event.result.content)\n"
    )
    manifest, script = project(tmp_path, SCRIPT, extra="extensions:\n  - path: ext.py\n")
    outcome = assemble(
        capsys, "run", str(manifest), "-p", "go", "--trust", "--no-session",
        "--model", f"scripted:{script}",
    )  # fmt: skip
    assert outcome.code == 1
    assert "extension `ext`: tool_result handler failed: ValueError" in outcome.err
    assert_safe(outcome.out, outcome.err)
    assert "\\x1b]52;c;" in outcome.err


def memory_project(tmp_path: Path) -> Path:
    store = tmp_path / "memory"
    store.mkdir()
    (store / "evil.md").write_text(
        '---\nname: evil\ndescription: "looks \\u202eharmless"\ntype: project\n---\n'
        f"body {json.loads(Y)}\n"
    )
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: remembers\nidentity: Test agent.\nworkspace: .\n"
        "memory:\n  store: memory\n"
    )
    return manifest


def test_memory_list_is_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outcome = assemble(capsys, "memory", "list", str(memory_project(tmp_path)))
    assert outcome.code == 0, outcome.err
    assert_safe(outcome.out, outcome.err)
    assert "evil\tproject\tlooks \\u202eharmless" in outcome.out


def on_a_terminal(*args: str) -> str:
    """Run `assemble ARGS` with stdout on a pseudo-terminal; what it printed there."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", *args],
        stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", errors="replace")


def test_memory_show_is_escaped_on_a_terminal_and_exact_in_a_pipe(tmp_path: Path) -> None:
    manifest = str(memory_project(tmp_path))
    shown = on_a_terminal("memory", "show", manifest, "evil")
    assert_safe(shown.replace("\r\n", "\n"))  # the terminal turns \n into \r\n
    assert "body \\x1b]52;c;" in shown
    piped = subprocess.run(
        [sys.executable, "-m", "assembler", "memory", "show", manifest, "evil"],
        capture_output=True, check=True,
    )  # fmt: skip
    assert b"body \x1b]52;c;ZWNobyBwd25lZA==\x07" in piped.stdout  # as stored


def test_render_is_escaped_on_a_terminal_and_exact_in_a_pipe(tmp_path: Path) -> None:
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(f"version: 1\nname: shown\nidentity: {Y}\nworkspace: .\n")
    shown = on_a_terminal("render", "--dry-run", str(manifest))
    assert_safe(shown.replace("\r\n", "\n"))
    assert "\\x1b]0;pwned\\x07" in shown
    piped = subprocess.run(
        [sys.executable, "-m", "assembler", "render", "--dry-run", str(manifest)],
        capture_output=True, check=True,
    )  # fmt: skip
    assert "\u202eevil\u202cback\x08\x7fover\rwrite".encode() in piped.stdout  # as `--write` has it


def test_validate_messages_quoting_the_manifest_are_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        f"version: 1\nname: shown\nidentity: x\n{json.dumps('idenity' + HOSTILE)}: 1\n"
    )
    outcome = assemble(capsys, "validate", str(manifest))
    assert outcome.code == 1
    assert_safe(outcome.out, outcome.err)
    assert "\\x1b]52;c;" in outcome.out + outcome.err
