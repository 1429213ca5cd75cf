"""Context files found without being listed (`resources/discovery.py`): the user's
file, then each directory from the repository root down to the workspace, outermost
first; `CLAUDE.md` only when named; an explicit `context_files` list stays exactly
that list; links out of a file's directory, and files over the size limit, are
handled as for any context file. Real directories and a real `.git`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from clirun import assemble

from assembler.resources.discovery import repository_root
from assembler.resources.loader import ResourceLoader
from assembler.validation.load import load_manifest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """repo/.git, repo/AGENTS.md, repo/sub/AGENTS.md, repo/sub/ws/AGENTS.md, and the
    manifest in repo/sub (workspace `ws`); the user's file in the config directory."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "sub" / "ws").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Root rules.\n")
    (root / "sub" / "AGENTS.md").write_text("Sub rules.\n")
    (root / "sub" / "ws" / "AGENTS.md").write_text("Workspace rules.\n")
    config = Path(os.environ["ASSEMBLER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "AGENTS.md").write_text("My own rules.\n")
    return root


def manifest(repo: Path, extra: str = "") -> Path:
    path = repo / "sub" / "agent.yaml"
    path.write_text("version: 1\nname: found\nidentity: You help.\nworkspace: ws\n" + extra)
    return path


def files(path: Path) -> list[tuple[str, str, str]]:
    snapshot = ResourceLoader(load_manifest(path)).reload()
    return [(f.path, f.origin, f.content) for f in snapshot.context_files]


def test_user_file_then_outermost_first_down_to_the_workspace(repo: Path) -> None:
    config = Path(os.environ["ASSEMBLER_CONFIG_DIR"])
    user = str(config / "AGENTS.md")
    if config.is_relative_to(Path.home()):
        user = "~/" + (config / "AGENTS.md").relative_to(Path.home()).as_posix()
    assert files(manifest(repo)) == [
        (user, "user", "My own rules."),
        ("../../AGENTS.md", "parent", "Root rules."),
        ("../AGENTS.md", "parent", "Sub rules."),
        ("AGENTS.md", "workspace", "Workspace rules."),
    ]


def test_the_prompt_shows_them_in_that_order(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "render", "--dry-run", str(manifest(repo)), "--prompt-only")
    assert result.code == 0, result.err
    workspace = result.out[result.out.index("## workspace") :]
    positions = [
        workspace.index(text)
        for text in ("My own rules.", "Root rules.", "Sub rules.", "Workspace rules.")
    ]
    assert positions == sorted(positions)
    assert "### ../../AGENTS.md\nRoot rules.\n\n### ../AGENTS.md\nSub rules." in workspace


def test_render_json_names_each_source(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = assemble(capsys, "render", "--dry-run", str(manifest(repo)), "--format", "json")
    assert result.code == 0, result.err
    (section,) = [s for s in json.loads(result.out)["sections"] if s["name"] == "workspace"]
    config = Path(os.environ["ASSEMBLER_CONFIG_DIR"]).resolve()
    sources = section["sources"][1:]
    assert sources[0].endswith(f"(user: {config / 'AGENTS.md'})")
    assert sources[1:] == [
        f"context file: ../../AGENTS.md (parent: {repo.resolve() / 'AGENTS.md'})",
        f"context file: ../AGENTS.md (parent: {repo.resolve() / 'sub' / 'AGENTS.md'})",
        "context file: AGENTS.md",
    ]


def test_outside_a_repository_only_the_workspace_and_the_user_file(repo: Path) -> None:
    (repo / ".git").rmdir()
    assert repository_root((repo / "sub" / "ws").resolve()) is None
    assert [origin for _, origin, _ in files(manifest(repo))] == ["user", "workspace"]


def test_a_work_tree_file_marks_the_root_too(repo: Path) -> None:
    (repo / ".git").rmdir()
    (repo / "sub" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/sub\n")
    assert [path for path, _, _ in files(manifest(repo))][1:] == ["../AGENTS.md", "AGENTS.md"]


def test_claude_md_only_when_named_and_a_link_to_agents_md_read_once(repo: Path) -> None:
    (repo / "CLAUDE.md").write_text("Claude rules.\n")
    (repo / "sub" / "ws" / "CLAUDE.md").symlink_to("AGENTS.md")
    assert "Claude rules." not in [content for _, _, content in files(manifest(repo))]
    named = manifest(repo, "context_discovery: {names: [AGENTS.md, CLAUDE.md], user: false}\n")
    assert [path for path, _, _ in files(named)] == [
        "../../AGENTS.md",
        "../../CLAUDE.md",
        "../AGENTS.md",
        "AGENTS.md",  # its CLAUDE.md is the same file
    ]


def test_an_explicit_list_stays_exactly_that_list(repo: Path) -> None:
    (repo / "sub" / "ws" / "NOTES.md").write_text("Notes.\n")
    explicit = manifest(repo, "context_files: [NOTES.md]\n")
    assert files(explicit) == [("NOTES.md", "workspace", "Notes.")]
    both = manifest(repo, "context_files: [NOTES.md]\ncontext_discovery: {user: false}\n")
    assert [path for path, _, _ in files(both)] == [
        "../../AGENTS.md",
        "../AGENTS.md",
        "AGENTS.md",
        "NOTES.md",  # listed after the discovered ones
    ]


def test_switched_off_it_is_the_workspace_agents_md_as_before(repo: Path) -> None:
    assert files(manifest(repo, "context_discovery: false\n")) == [
        ("AGENTS.md", "workspace", "Workspace rules.")
    ]
    assert [o for _, o, _ in files(manifest(repo, "context_discovery: {parents: false}\n"))] == [
        "user",
        "workspace",
    ]


def test_a_link_out_of_its_directory_is_skipped_with_a_warning(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the prompt\n")
    (repo / "sub" / "AGENTS.md").unlink()
    (repo / "sub" / "AGENTS.md").symlink_to(secret)
    snapshot = ResourceLoader(load_manifest(manifest(repo))).reload()
    assert "not for the prompt" not in [f.content for f in snapshot.context_files]
    assert [d.message for d in snapshot.diagnostics] == [
        "context file links out of its directory; skipped"
    ]


def test_the_size_limit_holds_for_a_parent_file(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("x" * 5000)
    path = manifest(repo, "limits: {context_file_max_bytes: 1024}\n")
    snapshot = ResourceLoader(load_manifest(path)).reload()
    (root,) = [f for f in snapshot.context_files if f.path == "../../AGENTS.md"]
    assert root.truncated and len(root.content) == 1024
    assert any("larger than 1,024 bytes" in d.message for d in snapshot.diagnostics)


def test_a_bad_value_is_a_located_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = manifest(repo, "context_discovery: {names: [docs/AGENTS.md]}\n")
    result = assemble(capsys, "validate", str(path))
    assert result.code != 0
    assert f"{path}:5:" in result.err + result.out
