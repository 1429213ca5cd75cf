"""The file tools through the editor (`fs/read_text_file`, `fs/write_text_file`) when it
offers them: the agent reads the unsaved buffer and writes into the editor, while the
workspace and the permission rules confine it exactly as on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp.schema import ClientCapabilities, FileSystemCapabilities
from acp_harness import Editor, manifest, serving

SCRIPT = """\
- tool_calls:
    - {name: read, arguments: {path: notes.txt}}
    - {name: edit, arguments: {path: notes.txt, old_text: unsaved, new_text: edited}}
    - {name: write, arguments: {path: sub/new.txt, content: "fresh\\n"}}
    - {name: read, arguments: {path: ../outside.txt}}
    - {name: read, arguments: {path: secret.txt}}
    - {name: read, arguments: {path: only-on-disk.txt, offset: 2}}
    - {name: read, arguments: {path: missing.txt}}
- text: Done.
"""

BOTH = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))


def test_the_file_tools_go_through_the_editor(tmp_path: Path) -> None:
    agent = manifest(
        tmp_path,
        SCRIPT,
        # one call at a time: the read must see the buffer before the edit changes it
        extra="permissions:\n  deny: ['read(secret.txt)']\nlimits:\n  max_parallel_tools: 1\n",
        files=[
            ("notes.txt", "saved text\n"),
            ("secret.txt", "s3cret\n"),
            ("only-on-disk.txt", "one\ntwo\nthree\n"),
        ],
    )
    (tmp_path / "outside.txt").write_text("not yours\n")
    work = (tmp_path / "work").resolve()
    notes = str(work / "notes.txt")
    editor = Editor(capabilities=BOTH, buffers={notes: "unsaved text\n"})

    async def scenario() -> str:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            assert (await acp.prompt(session, "Go.")).stop_reason == "end_turn"
            return session

    session = asyncio.run(scenario())
    results = [
        "".join(getattr(getattr(c, "content", None), "text", "") for c in u.content or [])
        for u in editor.progress(session)
    ]
    read, edit, write, outside, secret, disk_only, missing = results
    assert read.startswith("unsaved text\n[notes.txt: lines 1-1 of 1]")  # the buffer
    assert "Edited notes.txt at line 1" in edit
    assert editor.buffers[notes] == "edited text\n"  # in the editor...
    assert (work / "notes.txt").read_text() == "saved text\n"  # ...not behind its back
    assert write.startswith("Wrote 6 bytes to sub/new.txt (new file)")
    assert editor.buffers[str(work / "sub" / "new.txt")] == "fresh\n"
    assert (work / "sub").is_dir() and not (work / "sub" / "new.txt").exists()
    assert "outside the workspace" in outside and "not yours" not in outside
    assert "secret.txt" in secret and "s3cret" not in secret
    assert disk_only.startswith("two\nthree\n[only-on-disk.txt: lines 2-3 of 3]")
    # the editor cannot read it: the disk tool answers, with its own message
    assert editor.progress(session)[-1].status == "failed" and "missing.txt" in missing
    # the editor was asked about the workspace's files only, and never about the denied one
    assert editor.file_requests == [
        ("read", notes),
        ("read", notes),
        ("write", notes),
        ("write", str(work / "sub" / "new.txt")),
        ("read", str(work / "only-on-disk.txt")),
        ("read", str(work / "missing.txt")),
    ]


def test_without_the_capability_the_disk_is_used(tmp_path: Path) -> None:
    agent = manifest(
        tmp_path,
        "- tool_calls: [{name: write, arguments: {path: a.txt, content: x}}]\n- text: Done.\n",
    )
    reads_only = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    editor = Editor(capabilities=reads_only)

    async def scenario() -> None:
        async with serving(agent, "--no-session", editor=editor) as acp:
            session = await acp.start()
            await acp.prompt(session, "Write.")

    asyncio.run(scenario())
    assert (tmp_path / "work" / "a.txt").read_text() == "x"
    assert editor.file_requests == []


def test_the_agents_own_guards_are_not_written_through_the_editor(tmp_path: Path) -> None:
    """An extension inside the workspace is one of the agent's guards: `write` and
    `edit` refuse it before the editor hears of it, as on disk."""
    agent = manifest(
        tmp_path,
        "- tool_calls:\n"
        "    - {name: write, arguments: {path: ext.py, content: 'pass'}}\n"
        "    - {name: edit, arguments: {path: ext.py, old_text: options, new_text: o}}\n"
        "- text: Done.\n",
        extra="extensions:\n  - path: work/ext.py\nlimits:\n  max_parallel_tools: 1\n",
        files=[("ext.py", "def setup(api, options):\n    pass\n")],
    )
    editor = Editor(capabilities=BOTH)

    async def scenario() -> str:
        async with serving(agent, "--no-session", "--trust", editor=editor) as acp:
            session = await acp.start()
            await acp.prompt(session, "Change the extension.")
            return session

    session = asyncio.run(scenario())
    write, edit = editor.progress(session)
    for refused in (write, edit):
        assert refused.status == "failed" and "one of the agent's own guards" in str(
            refused.content
        )
    assert editor.file_requests == []
    assert (tmp_path / "work" / "ext.py").read_text() == "def setup(api, options):\n    pass\n"
