"""Issue 20, items 10, 11 and 16: trust over the whole agent tree, replays that call
tools, and MCP servers whose file sits outside the trusted directory.

Each attack is built in a real temporary repository and run through the real
front end; the project's code would leave a marker file, which must stay absent.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from clirun import assemble

from assembler.agent.build import build_agent
from assembler.errors import TrustError
from assembler.testing import ScriptedModel, text
from assembler.trust import TrustStore

MARKER = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, "utf-8")
    return path


# -- 10. eval decides trust for the whole tree -------------------------------------


def hostile_team(repo: Path) -> Path:
    """A lead in `lead/` (trusted) whose replay delegates to a child in `child/`
    (never trusted) that loads an extension writing the marker."""
    marker = repo / "marker"
    (repo / "work").mkdir(parents=True)
    write(
        repo / "lead" / "lead.yaml",
        "version: 1\nname: lead\nidentity: You delegate.\nmodel: scripted:lead.script.yaml\n"
        "workspace: ../work\ntools:\n  sets:\n    - agent: ../child/child.yaml\n",
    )
    write(
        repo / "lead" / "lead.script.yaml",
        "- tool_calls: [{name: child, arguments: {task: go}}]\n- text: done\n",
    )
    write(
        repo / "child" / "child.yaml",
        "version: 1\nname: child\ndescription: Helps.\nidentity: You answer.\n"
        "model: scripted:child.script.yaml\nworkspace: ../work\n"
        "extensions:\n  - path: ext.py\n",
    )
    write(repo / "child" / "child.script.yaml", "- text: ok\n")
    write(
        repo / "child" / "ext.py",
        MARKER.format(marker=str(marker)) + "def setup(api, options):\n    pass\n",
    )
    write(
        repo / "lead" / "team.eval.yaml",
        "version: 1\nagent: lead.yaml\ntasks:\n  - id: one\n    prompt: go\n",
    )
    TrustStore().add(repo / "lead")
    return marker


def test_eval_refuses_an_untrusted_sub_agent_before_any_task_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    marker = hostile_team(repo)
    out = tmp_path / "results.jsonl"
    result = assemble(capsys, "eval", str(repo / "lead" / "team.eval.yaml"), "--out", str(out))
    assert result.code != 0
    assert "not a trusted directory" in result.err
    assert "sub-agent lead/child: extension file ext.py" in result.err
    assert str((repo / "child").resolve()) in result.err
    assert not marker.exists()
    assert not out.exists()  # no task started


def test_run_refuses_the_same_tree_with_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    marker = hostile_team(repo)
    result = assemble(capsys, "run", str(repo / "lead" / "lead.yaml"), "-p", "go")
    assert result.code != 0
    assert "sub-agent lead/child: extension file ext.py" in result.err
    assert not marker.exists()


def test_eval_with_trust_runs_the_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    marker = hostile_team(repo)
    out = tmp_path / "results.jsonl"
    result = assemble(
        capsys, "eval", str(repo / "lead" / "team.eval.yaml"), "--out", str(out), "--trust"
    )
    assert result.code == 0, result.err
    assert marker.exists()  # --trust is the user's decision: the child's code ran


def test_a_child_file_changed_after_trust_was_decided_is_not_built(tmp_path: Path) -> None:
    """The decision is for the code as it was: a delegation after the parent (or
    anyone) rewrote the child's extension refuses instead of running the new code."""
    repo = tmp_path / "repo"
    hostile_team(repo)
    TrustStore().add(repo / "child")
    late = repo / "late-marker"
    lead = build_agent(repo / "lead" / "lead.yaml", record_session=False)
    (child,) = lead.subagents
    extension = repo / "child" / "ext.py"
    extension.write_text(
        MARKER.format(marker=str(late)) + "def setup(api, options):\n    pass\n", "utf-8"
    )
    with pytest.raises(TrustError, match=r"ext\.py changed since it was trusted"):
        child.build(record_session=False)
    assert not late.exists()


# -- 11. a replay that calls tools is project code ---------------------------------


def replay_project(root: Path, script: str) -> Path:
    write(root / "s.yaml", script)
    (root / "ws").mkdir(parents=True, exist_ok=True)
    return write(
        root / "agent.yaml",
        "version: 1\nname: replayed\nidentity: You help.\nmodel: scripted:s.yaml\n"
        "workspace: ws\ntools:\n  sets:\n    - builtin: [write]\n",
    )


WRITES = "- tool_calls: [{name: write, arguments: {path: planted.txt, content: x}}]\n- text: ok\n"


def test_a_replay_that_calls_tools_needs_trust(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = replay_project(tmp_path / "repo", WRITES)
    result = assemble(capsys, "run", str(manifest), "-p", "go")
    assert result.code != 0
    assert "replay script s.yaml (calls write)" in result.err
    assert "--trust" in result.err
    assert not (tmp_path / "repo" / "ws" / "planted.txt").exists()

    result = assemble(capsys, "run", str(manifest), "-p", "go", "--trust")
    assert result.code == 0, result.err
    assert (tmp_path / "repo" / "ws" / "planted.txt").exists()


def test_a_replay_named_by_model_is_judged_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = replay_project(tmp_path / "repo", "- text: only words\n")
    write(tmp_path / "repo" / "other.yaml", WRITES)
    result = assemble(capsys, "run", str(manifest), "-p", "go", "--model", "scripted:other.yaml")
    assert result.code != 0
    assert "replay script other.yaml (calls write)" in result.err
    assert not (tmp_path / "repo" / "ws" / "planted.txt").exists()


def test_a_replay_of_text_only_needs_no_trust(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = replay_project(tmp_path / "repo", "- text: only words\n")
    result = assemble(capsys, "run", str(manifest), "-p", "go")
    assert result.code == 0, result.err
    assert "only words" in result.out


def test_an_eval_task_replay_that_calls_tools_needs_trust(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    replay_project(repo, "- text: only words\n")
    write(repo / "task.yaml", WRITES)
    write(
        repo / "e.eval.yaml",
        "version: 1\nagent: agent.yaml\ntasks:\n  - id: one\n    prompt: go\n"
        "    model: scripted:task.yaml\n",
    )
    out = tmp_path / "r.jsonl"
    result = assemble(capsys, "eval", str(repo / "e.eval.yaml"), "--out", str(out))
    assert result.code != 0
    assert "replay script task.yaml (calls write)" in result.err
    assert not out.exists()


# -- 16. an MCP stdio command runs the file where it resolves ----------------------


def test_an_mcp_command_in_an_untrusted_workspace_does_not_start(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    repo = tmp_path / "repo"
    marker = tmp_path / "marker"
    work = repo / "work"
    server = write(work / "server", f"#!/bin/sh\necho ran > {marker}\n")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    manifest = write(
        repo / "agents" / "agent.yaml",
        "version: 1\nname: mcp\nidentity: You help.\nworkspace: ../work\n"
        "tools:\n  sets:\n    - mcp: local\n  servers:\n    local: {command: ./server}\n",
    )
    TrustStore().add(repo / "agents")  # the manifest's directory, not the workspace

    async def build_and_start() -> None:
        agent = build_agent(manifest, provider=ScriptedModel([text("hi")]), record_session=False)
        try:
            await agent.start()
        finally:
            await agent.aclose()

    with pytest.raises(TrustError) as caught:
        asyncio.run(build_and_start())
    message = str(caught.value)
    assert str(work.resolve()) in message
    assert "runs ../work/server" in message
    assert not marker.exists()

    TrustStore().add(work)
    asyncio.run(build_and_start())  # trusted now: it starts (and, not being a server, fails)
    assert marker.exists()


def test_an_mcp_command_found_on_a_path_the_manifest_sets_needs_its_directory_trusted(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp")
    repo = tmp_path / "repo"
    bin_dir = tmp_path / "elsewhere" / "bin"
    server = write(bin_dir / "serve-it", "#!/bin/sh\nexit 1\n")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    (repo / "work").mkdir(parents=True)
    manifest = write(
        repo / "agents" / "agent.yaml",
        "version: 1\nname: mcp\nidentity: You help.\nworkspace: ../work\n"
        "tools:\n  sets:\n    - mcp: local\n  servers:\n    local:\n"
        f"      command: serve-it\n      env: {{PATH: '{bin_dir}{os.pathsep}/usr/bin'}}\n",
    )
    TrustStore().add(repo)
    with pytest.raises(TrustError) as caught:
        build_agent(manifest, provider=ScriptedModel([]), record_session=False)
    assert str(bin_dir.resolve()) in str(caught.value)


def test_system_directories_are_never_asked_about(tmp_path: Path) -> None:
    """A program the user would run anyway (found on their own PATH, even through a
    PATH the manifest sets) and a server started outside the project need no trust of
    `/usr/bin` or `/`: only the manifest's directory is asked about."""
    from assembler.trust import project_code
    from assembler.validation.load import load_manifest

    repo = tmp_path / "repo"
    (repo / "work").mkdir(parents=True)
    manifest = write(
        repo / "agents" / "agent.yaml",
        "version: 1\nname: mcp\nidentity: You help.\nworkspace: ../work\n"
        "tools:\n  sets:\n    - mcp: a\n    - mcp: b\n  servers:\n"
        f"    a: {{command: sh, env: {{PATH: '{os.environ['PATH']}'}}}}\n"
        "    b: {command: sh, cwd: /}\n",
    )
    roots = {item.root for item in project_code(load_manifest(manifest))}
    assert roots == {(repo / "agents").resolve(), (repo / "work").resolve()}
