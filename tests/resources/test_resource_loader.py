"""`ResourceLoader.reload()`: one immutable snapshot, flags that switch off one source
each, diagnostics instead of exceptions (DESIGN.md section 3)."""

from __future__ import annotations

import asyncio
import dataclasses
import textwrap
from pathlib import Path

import pytest

from assembler.agent.build import build_agent
from assembler.agent.preview import preview_dry_run
from assembler.errors import Issue
from assembler.manifest.model import Manifest
from assembler.resources.loader import LoaderFlags, ResourceLoader, ResourceSnapshot
from assembler.testing import ScriptedModel
from assembler.validation.load import load_manifest

TOOLS_TEMPLATE = "{% for tool in tools %}* {{ tool.name }}\n{% endfor %}"


def write_skill(folder: Path, description: str | None = None, body: str = "# Body\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    skill_md = folder / "SKILL.md"
    description = description or f"The {folder.name} skill."
    text = f"---\nname: {folder.name}\ndescription: {description}\n---\n"
    skill_md.write_text(text + body, encoding="utf-8")
    return skill_md


def make_project(root: Path, extra: str = "") -> Path:
    """A manifest with one source of each kind: AGENTS.md, two skills, a template
    override and an extension file. Returns the manifest path."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("# Project\nBuild with make.\n", encoding="utf-8")
    write_skill(root / "skills" / "alpha")
    write_skill(root / "skills" / "beta")
    (root / "ext.py").write_text("def setup(api, options):\n    pass\n", encoding="utf-8")
    manifest = root / "agent.yaml"
    manifest.write_text(
        textwrap.dedent(
            """\
            version: 1
            name: resources
            identity: A test agent.
            workspace: ws
            tools:
              sets: [{builtin: [read]}]
            skills: [skills]
            extensions:
              - path: ext.py
            prompt:
              tools:
                template: "{% for tool in tools %}* {{ tool.name }}\\n{% endfor %}"
            """
        )
        + extra,
        encoding="utf-8",
    )
    return manifest


@pytest.fixture
def project(tmp_path: Path) -> Manifest:
    return load_manifest(make_project(tmp_path / "project"))


def skill_names(snapshot: ResourceSnapshot) -> list[str]:
    return [skill.name for skill in snapshot.skills]


def messages(snapshot: ResourceSnapshot) -> list[str]:
    return [issue.message for issue in snapshot.diagnostics]


# -- one snapshot of every source ---------------------------------------------------


def test_reload_reads_every_source_into_one_snapshot(project: Manifest) -> None:
    loader = ResourceLoader(project)
    assert loader.snapshot == ResourceSnapshot()  # nothing is read before reload()
    snapshot = loader.reload()
    assert loader.snapshot is snapshot
    assert [(f.path, f.content, f.truncated) for f in snapshot.context_files] == [
        ("AGENTS.md", "# Project\nBuild with make.", False)
    ]
    assert snapshot.context_files[0].absolute == project.workspace.resolve() / "AGENTS.md"
    assert skill_names(snapshot) == ["alpha", "beta"]
    assert list(snapshot.templates) == ["tools"]
    assert snapshot.templates["tools"].text == TOOLS_TEMPLATE
    assert [e.name for e in snapshot.extensions] == ["ext"]
    assert snapshot.diagnostics == ()


def test_the_snapshot_is_immutable(project: Manifest) -> None:
    snapshot = ResourceLoader(project).reload()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.skills = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.templates["identity"] = snapshot.templates["tools"]  # type: ignore[index]
    assert isinstance(snapshot.context_files, tuple)
    assert isinstance(snapshot.skills, tuple)
    assert isinstance(snapshot.extensions, tuple)
    assert isinstance(snapshot.diagnostics, tuple)


def test_each_reload_is_a_new_snapshot_and_the_old_one_is_untouched(
    project: Manifest,
) -> None:
    loader = ResourceLoader(project)
    first = loader.reload()
    (project.workspace / "AGENTS.md").write_text("changed\n", encoding="utf-8")
    second = loader.reload()
    assert first.context_files[0].content == "# Project\nBuild with make."
    assert second.context_files[0].content == "changed"
    assert loader.snapshot is second


# -- flags: each switches off its own source only ------------------------------------

SOURCES = {
    "no_context_files": lambda s: [f.path for f in s.context_files],
    "no_skills": skill_names,
    "no_prompt_templates": lambda s: list(s.templates),
    "no_extensions": lambda s: [e.name for e in s.extensions],
}
PRESENT = {
    "no_context_files": ["AGENTS.md"],
    "no_skills": ["alpha", "beta"],
    "no_prompt_templates": ["tools"],
    "no_extensions": ["ext"],
}


@pytest.mark.parametrize("flag", sorted(SOURCES))
def test_a_flag_switches_off_its_own_source_only(project: Manifest, flag: str) -> None:
    snapshot = ResourceLoader(project, LoaderFlags(**{flag: True})).reload()
    assert SOURCES[flag](snapshot) == []
    for other, read in SOURCES.items():
        if other != flag:
            assert read(snapshot) == PRESENT[other], other
    assert snapshot.diagnostics == ()


def test_no_flags_at_all_means_every_source(project: Manifest) -> None:
    snapshot = ResourceLoader(project, LoaderFlags()).reload()
    assert {name: read(snapshot) for name, read in SOURCES.items()} == PRESENT


def test_all_flags_together_leave_nothing_extra(project: Manifest) -> None:
    flags = LoaderFlags(
        no_skills=True, no_context_files=True, no_prompt_templates=True, no_extensions=True
    )
    snapshot = ResourceLoader(project, flags).reload()
    assert {name: read(snapshot) for name, read in SOURCES.items()} == {n: [] for n in SOURCES}


def test_an_explicit_skill_still_loads_under_no_skills(project: Manifest, tmp_path: Path) -> None:
    write_skill(tmp_path / "elsewhere" / "gamma")
    flags = LoaderFlags(no_skills=True, explicit_skills=(tmp_path / "elsewhere" / "gamma",))
    snapshot = ResourceLoader(project, flags).reload()
    assert skill_names(snapshot) == ["gamma"]
    assert snapshot.skills[0].source == "cli"
    # and without no_skills it comes first, ahead of the manifest's directories
    both = ResourceLoader(project, dataclasses.replace(flags, no_skills=False)).reload()
    assert skill_names(both) == ["gamma", "alpha", "beta"]


def test_an_explicit_skill_file_loads_too(project: Manifest, tmp_path: Path) -> None:
    skill_md = write_skill(tmp_path / "elsewhere" / "gamma")
    flags = LoaderFlags(no_skills=True, explicit_skills=(skill_md,))
    assert skill_names(ResourceLoader(project, flags).reload()) == ["gamma"]


# -- context files -------------------------------------------------------------------


def project_with(tmp_path: Path, extra: str) -> Manifest:
    return load_manifest(make_project(tmp_path / "project", extra))


def test_context_files_are_read_in_declared_order_under_their_relative_path(
    tmp_path: Path,
) -> None:
    manifest = project_with(tmp_path, "context_files: [docs/STYLE.md, AGENTS.md]\n")
    (manifest.workspace / "docs").mkdir()
    (manifest.workspace / "docs" / "STYLE.md").write_text("Tabs.\n\n\n", encoding="utf-8")
    snapshot = ResourceLoader(manifest).reload()
    assert [(f.path, f.content) for f in snapshot.context_files] == [
        ("docs/STYLE.md", "Tabs."),
        ("AGENTS.md", "# Project\nBuild with make."),
    ]


def test_a_context_file_over_the_limit_is_cut_with_a_warning(tmp_path: Path) -> None:
    manifest = project_with(tmp_path, "limits: {context_file_max_bytes: 16}\n")
    (manifest.workspace / "AGENTS.md").write_text("0123456789abcdefXYZ-cut-off\n", "utf-8")
    snapshot = ResourceLoader(manifest).reload()
    [file] = snapshot.context_files
    assert file.content == "0123456789abcdef"
    assert file.truncated is True
    assert snapshot.diagnostics == (
        Issue(
            "AGENTS.md",
            0,
            0,
            "warning",
            "context file is larger than 16 bytes; the prompt shows the first 16",
        ),
    )


def test_a_cut_through_a_multibyte_character_drops_it_cleanly(tmp_path: Path) -> None:
    manifest = project_with(tmp_path, "limits: {context_file_max_bytes: 4}\n")
    (manifest.workspace / "AGENTS.md").write_text("abcé and more", "utf-8")  # é: 2 bytes
    [file] = ResourceLoader(manifest).reload().context_files
    assert file.content == "abc"


def test_a_context_file_exactly_at_the_limit_is_not_cut(tmp_path: Path) -> None:
    manifest = project_with(tmp_path, "limits: {context_file_max_bytes: 16}\n")
    (manifest.workspace / "AGENTS.md").write_text("0123456789abcdef", "utf-8")
    snapshot = ResourceLoader(manifest).reload()
    assert snapshot.context_files[0].truncated is False
    assert snapshot.diagnostics == ()


@pytest.mark.parametrize(
    ("character", "named"),
    [
        ("\u200b", "U+200B ZERO WIDTH SPACE"),
        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("\U000e0041", "U+E0041 TAG LATIN CAPITAL LETTER A"),
    ],
)
def test_invisible_or_bidi_characters_are_a_warning_naming_the_code_point(
    tmp_path: Path, character: str, named: str
) -> None:
    manifest = project_with(tmp_path, "")
    text = f"# Project\nrun {character}make\n"
    (manifest.workspace / "AGENTS.md").write_text(text, "utf-8")
    snapshot = ResourceLoader(manifest).reload()
    [issue] = snapshot.diagnostics
    assert (issue.file, issue.line, issue.severity) == ("AGENTS.md", 2, "warning")
    assert issue.message == (
        f"invisible or bidirectional control characters ({named}): the model reads "
        "text a reviewer may not see"
    )
    # a warning, not a filter: the prompt shows what the file holds
    assert snapshot.context_files[0].content == text.rstrip("\n")


def test_several_hidden_characters_on_one_line_are_named_in_one_warning(tmp_path: Path) -> None:
    manifest = project_with(tmp_path, "")
    (manifest.workspace / "AGENTS.md").write_text("a\u202eb\u200bc\u202ed\n", "utf-8")
    [issue] = ResourceLoader(manifest).reload().diagnostics
    assert "(U+200B ZERO WIDTH SPACE, U+202E RIGHT-TO-LEFT OVERRIDE)" in issue.message


def test_a_missing_default_agents_md_is_silent_but_a_declared_file_warns(tmp_path: Path) -> None:
    default = project_with(tmp_path / "a", "")
    (default.workspace / "AGENTS.md").unlink()
    snapshot = ResourceLoader(default).reload()
    assert (snapshot.context_files, snapshot.diagnostics) == ((), ())

    declared = project_with(tmp_path / "b", "context_files: [AGENTS.md, NOTES.md]\n")
    snapshot = ResourceLoader(declared).reload()
    assert [f.path for f in snapshot.context_files] == ["AGENTS.md"]
    (issue,) = snapshot.diagnostics
    # where the manifest declares it, in the words of `validate` (the CLI shows it once)
    assert issue == Issue(
        str(declared.path),
        issue.line,
        28,  # the column of `NOTES.md`
        "warning",
        "context file NOTES.md not found in the workspace",
        "context_files[1]",
    )
    line = declared.path.read_text().splitlines()[issue.line - 1]
    assert line.startswith("context_files: [AGENTS.md, NOTES.md]")


def test_a_context_file_outside_the_workspace_is_skipped(tmp_path: Path) -> None:
    manifest = project_with(tmp_path, "context_files: [../secret.md]\n")
    (tmp_path / "project" / "secret.md").write_text("secret\n", "utf-8")
    snapshot = ResourceLoader(manifest).reload()
    assert snapshot.context_files == ()
    assert messages(snapshot) == ["context file ../secret.md is outside the workspace; skipped"]


# -- skills --------------------------------------------------------------------------


def test_a_skill_folder_is_a_root_and_is_not_searched_further(project: Manifest) -> None:
    write_skill(project.directory / "skills" / "alpha" / "examples" / "nested")
    snapshot = ResourceLoader(project).reload()
    assert skill_names(snapshot) == ["alpha", "beta"]
    assert snapshot.diagnostics == ()


def test_a_name_collision_keeps_the_first_and_names_the_loser(tmp_path: Path) -> None:
    manifest = project_with(tmp_path, "")
    manifest = dataclasses.replace(manifest, skills=(*manifest.skills, manifest.directory / "more"))
    loser = write_skill(manifest.directory / "more" / "alpha", "The second alpha.")
    snapshot = ResourceLoader(manifest).reload()
    assert skill_names(snapshot) == ["alpha", "beta"]
    assert snapshot.skills[0].description == "The alpha skill."
    [issue] = snapshot.diagnostics
    assert issue.severity == "warning"
    assert issue.file == str(loser)
    kept = manifest.directory / "skills" / "alpha" / "SKILL.md"
    assert issue.message == f"skill 'alpha' is defined twice: keeping {kept}, ignoring {loser}"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"no frontmatter here\n", "must start with YAML frontmatter"),
        (b"---\nname: broken\n", "frontmatter is not closed"),
        (b"---\nname: [unclosed\n---\n", ""),
        (b"---\nname: other-name\ndescription: x\n---\n", "must match the folder name"),
        (b"---\nname: broken\n---\n", "missing required field `description`"),
        (b"---\n- a list\n---\n", "frontmatter must be a mapping"),
        (b"---\nname: broken\ndescription: \xff\xfe\n---\n", ""),
        (b"---\n---\n", "frontmatter is empty"),
    ],
)
def test_frontmatter_problems_become_diagnostics_never_exceptions(
    project: Manifest, content: bytes, problem: str
) -> None:
    # the manifest validated with good skills; a skill breaks on disk afterwards
    broken = project.directory / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_bytes(content)
    snapshot = ResourceLoader(project).reload()
    assert skill_names(snapshot) == ["alpha", "beta"]
    # the skill is left out and each of its errors says so, as a warning (issue 12)
    assert not [i for i in snapshot.diagnostics if i.severity == "error"]
    skipped = [i for i in snapshot.diagnostics if i.message.endswith("(skill skipped)")]
    assert skipped, snapshot.diagnostics
    assert all(str(broken / "SKILL.md") == i.file and i.severity == "warning" for i in skipped)
    assert problem in skipped[0].message


def test_a_skill_directory_that_vanished_is_a_warning(project: Manifest) -> None:
    gone = project.directory / "skills"
    for skill in ("alpha", "beta"):
        (gone / skill / "SKILL.md").unlink()
        (gone / skill).rmdir()
    gone.rmdir()
    snapshot = ResourceLoader(project).reload()
    assert snapshot.skills == ()
    assert snapshot.diagnostics == (
        Issue(str(gone), 0, 0, "warning", "skill directory does not exist"),
    )


def test_the_skill_registry_is_a_build_time_snapshot(project: Manifest) -> None:
    loader = ResourceLoader(project)
    snapshot = loader.reload()
    write_skill(project.directory / "skills" / "gamma")
    assert skill_names(snapshot) == ["alpha", "beta"]
    assert skill_names(loader.snapshot) == ["alpha", "beta"]
    assert skill_names(loader.reload()) == ["alpha", "beta", "gamma"]


def test_an_agent_sees_a_new_skill_only_after_its_next_reload(project: Manifest) -> None:
    agent = build_agent(project, provider=ScriptedModel(), trust=True, record_session=False)
    try:
        before = agent.system_prompt()
        write_skill(project.directory / "skills" / "gamma", "Freshly added.")
        assert agent.system_prompt() == before
        assert "gamma" not in before
        agent.reload()
        after = agent.system_prompt()
        gamma = project.directory / "skills" / "gamma" / "SKILL.md"  # outside the workspace
        assert after == f"{before}\n- **gamma**: Freshly added. (file: `{gamma}`)"
    finally:
        asyncio.run(agent.aclose())


def test_a_skill_body_is_never_in_the_prompt(project: Manifest) -> None:
    marker = "BODY-MARKER-9c1e4f"
    write_skill(
        project.directory / "skills" / "alpha", "The alpha skill.", body=f"# Alpha\n{marker}\n"
    )
    dry = preview_dry_run(project).rendered.text
    assert "- **alpha**: The alpha skill." in dry
    assert marker not in dry

    model = ScriptedModel(["done"])
    agent = build_agent(project, provider=model, trust=True, record_session=False)
    asyncio.run(agent.prompt("hi"))
    system = model.requests[0].system
    assert "- **alpha**: The alpha skill." in system
    assert marker not in system
    assert all(marker not in str(message) for message in model.requests[0].messages)


# -- template overrides --------------------------------------------------------------


def test_a_template_file_is_read_again_on_reload(tmp_path: Path) -> None:
    root = tmp_path / "project"
    manifest_path = make_project(root)
    text = manifest_path.read_text("utf-8").replace(
        '    template: "{% for tool in tools %}* {{ tool.name }}\\n{% endfor %}"',
        "    file: tools.md.j2",
    )
    manifest_path.write_text(text, "utf-8")
    (root / "tools.md.j2").write_text("first: {{ tools|length }}", "utf-8")
    manifest = load_manifest(manifest_path)
    loader = ResourceLoader(manifest)
    assert loader.reload().templates["tools"].text == "first: {{ tools|length }}"
    (root / "tools.md.j2").write_text("second: {{ tools|length }}", "utf-8")
    snapshot = loader.reload()
    assert snapshot.templates["tools"].text == "second: {{ tools|length }}"
    assert snapshot.templates["tools"].file == root / "tools.md.j2"
    (root / "tools.md.j2").unlink()
    snapshot = loader.reload()
    assert snapshot.templates["tools"].text == "first: {{ tools|length }}"
    [issue] = snapshot.diagnostics
    assert issue.severity == "warning"
    assert "template file cannot be read" in issue.message
