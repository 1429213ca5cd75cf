"""Issue 20, item 12: the agent must not rewrite its own guards.

The file tools refuse writes to the agent's manifest (and its sub-agents'), its
extension files, Python tool modules (and their compiled caches), replay scripts and
prompt templates, whatever the permission rules say; `permissions.self_edit` opts a
path in. A project file changed during a run is not loaded by `reload` without trust
again. Every attack runs a scripted model through the real `build_agent` on a real
temporary project whose workspace holds its own manifest (`workspace: .`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assembler.agent.agent import Agent
from assembler.agent.build import build_agent
from assembler.errors import TrustError
from assembler.runner.events import ToolCallResult
from assembler.testing import ScriptedModel, reply, text, tool_call

MARKER = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"
EXTENSION = "def setup(api, options):\n    pass\n"


def project(root: Path, extra: str = "") -> Path:
    """An agent whose workspace is the directory holding everything it runs."""
    files = {
        "ext/guard.py": EXTENSION,
        "helpers.py": "def f() -> str:\n    '''Say hi.'''\n    return 'hi'\n",
        "s.yaml": "- text: replayed\n",
        "prompts/identity.md.j2": "{{ identity }}\n",
        "team/child.yaml": (
            "version: 1\nname: child\ndescription: Helps.\nidentity: You help.\n"
            "model: scripted:../s.yaml\nworkspace: ..\n"
        ),
        "notes.md": "free to change\n",
    }
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, "utf-8")
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: self\nidentity: You help.\nmodel: scripted:s.yaml\nworkspace: .\n"
        "tools:\n  sets:\n    - builtin: [read, write, edit]\n    - python: helpers:f\n"
        "    - agent: team/child.yaml\n"
        "extensions:\n  - path: ext/guard.py\n"
        "prompt:\n  identity: {file: prompts/identity.md.j2}\n"
        "permissions:\n  allow: [write, edit]\n" + extra,
        "utf-8",
    )
    return manifest


def run(manifest: Path, *steps: object) -> tuple[list[ToolCallResult], Agent]:
    agent = build_agent(
        manifest,
        provider=ScriptedModel([*steps, text("done")]),  # type: ignore[list-item]
        trust=True,
        record_session=False,
    )

    async def go() -> list[ToolCallResult]:
        async with agent:
            return [e async for e in agent.stream("go") if isinstance(e, ToolCallResult)]

    return asyncio.run(go()), agent


GUARDS = [
    "agent.yaml",
    "team/child.yaml",
    "ext/guard.py",
    "helpers.py",
    "s.yaml",
    "prompts/identity.md.j2",
    "__pycache__/helpers.cpython-311.pyc",
    "ext/__pycache__/guard.cpython-311.pyc",
]


@pytest.mark.parametrize("target", GUARDS)
def test_write_to_a_guard_is_refused_whatever_the_rules(tmp_path: Path, target: str) -> None:
    manifest = project(tmp_path)
    path = tmp_path / target
    before = path.read_bytes() if path.exists() else None
    results, _ = run(manifest, tool_call("write", path=target, content="import os\n"))
    (result,) = results
    assert result.is_error, result.content
    assert "guards" in result.content and target.rsplit("/", maxsplit=1)[-1] in result.content
    assert (path.read_bytes() if path.exists() else None) == before


def test_edit_and_links_into_a_guard_are_refused(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    (tmp_path / "alias.py").symlink_to("ext/guard.py")
    results, _ = run(
        manifest,
        reply(
            tool_call("edit", path="ext/guard.py", old_text="pass", new_text="import os"),
            tool_call("write", path="alias.py", content="import os\n"),
            tool_call("write", path="./ext/../agent.yaml", content="x"),
        ),
    )
    assert [r.is_error for r in results] == [True, True, True]
    assert (tmp_path / "ext" / "guard.py").read_text() == EXTENSION


def test_other_files_stay_writable(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    results, _ = run(manifest, tool_call("write", path="notes.md", content="changed\n"))
    assert not results[0].is_error, results[0].content
    assert (tmp_path / "notes.md").read_text() == "changed\n"


def test_self_edit_opts_a_path_in(tmp_path: Path) -> None:
    manifest = project(tmp_path, "  self_edit: [prompts/]\n")
    results, _ = run(
        manifest,
        reply(
            tool_call("write", path="prompts/identity.md.j2", content="{{ identity }}!\n"),
            tool_call("write", path="ext/guard.py", content="import os\n"),
        ),
    )
    assert [r.is_error for r in results] == [False, True]
    assert (tmp_path / "prompts" / "identity.md.j2").read_text() == "{{ identity }}!\n"


def test_reload_does_not_run_an_extension_changed_during_the_run(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    marker = tmp_path / "marker"
    _, agent = run(manifest)
    # changed behind the file tools' back (a shell, another program): still refused
    (tmp_path / "ext" / "guard.py").write_text(MARKER.format(marker=str(marker)) + EXTENSION)
    with pytest.raises(TrustError, match=r"guard\.py changed since it was trusted"):
        agent.reload()
    assert not marker.exists()

    agent.reload(trust=True)  # the caller read the change
    assert marker.exists()


def test_reload_asks_again_with_the_question_the_agent_was_built_with(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    marker = tmp_path / "marker"
    asked: list[list[str]] = []

    def ask(directory: Path, code: list[str]) -> bool:
        asked.append(code)
        return False

    agent = build_agent(
        manifest, provider=ScriptedModel([]), trust=True, ask_trust=ask, record_session=False
    )
    agent.reload()  # nothing changed: nothing asked
    assert asked == []
    (tmp_path / "ext" / "guard.py").write_text(MARKER.format(marker=str(marker)) + EXTENSION)
    with pytest.raises(TrustError):
        agent.reload()
    assert len(asked) == 1 and "guard.py changed since it was trusted" in asked[0][0]
    assert not marker.exists()


def test_a_yes_to_the_reload_question_loads_the_change_and_becomes_the_decision(
    tmp_path: Path,
) -> None:
    manifest = project(tmp_path)
    marker = tmp_path / "marker"
    asked: list[list[str]] = []

    def ask(directory: Path, code: list[str]) -> bool:
        asked.append(code)
        return True

    agent = build_agent(
        manifest, provider=ScriptedModel([]), trust=True, ask_trust=ask, record_session=False
    )
    (tmp_path / "ext" / "guard.py").write_text(MARKER.format(marker=str(marker)) + EXTENSION)
    agent.reload()
    assert marker.exists()
    assert len(asked) == 1
    agent.reload()  # the yes covers the changed file now: nothing asked again
    assert len(asked) == 1


def test_a_refused_reload_says_what_was_not_covered_and_what_to_do(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    _, agent = run(manifest)
    (tmp_path / "ext" / "guard.py").write_text(EXTENSION + "\n# changed\n")
    (tmp_path / "helpers.py").write_text("def f() -> str:\n    return 'hi!'\n")
    with pytest.raises(TrustError) as raised:
        agent.reload(trust=False)
    lines = str(raised.value).splitlines()
    assert lines[0] == "this code was not covered by the trust decided for the agent:"
    assert len(lines) == 4, lines  # one line for each changed file
    assert all(line.startswith("  - ") for line in lines[1:3])
    assert any("guard.py changed since it was trusted" in line for line in lines[1:3])
    assert any("helpers.py changed since it was trusted" in line for line in lines[1:3])
    assert lines[3:] == [
        "Nothing was reloaded. Read the change; reload with trust (`reload(trust=True)`, RPC "
        '`reload` with `"trust": true`) or start again.'
    ]


def test_a_reload_with_trust_false_refuses_without_asking(tmp_path: Path) -> None:
    manifest = project(tmp_path)
    asked: list[list[str]] = []

    def ask(directory: Path, code: list[str]) -> bool:
        asked.append(code)
        return True

    agent = build_agent(
        manifest, provider=ScriptedModel([]), trust=True, ask_trust=ask, record_session=False
    )
    (tmp_path / "ext" / "guard.py").write_text(EXTENSION + "\n# changed\n")
    with pytest.raises(TrustError, match="Nothing was reloaded"):
        agent.reload(trust=False)
    assert asked == []
