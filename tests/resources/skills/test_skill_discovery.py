"""`discover_skills` and `parse_skill` beyond the corpus: scanning, collisions, fuzzing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler.resources.skills import Skill, discover_skills, parse_skill


def make_skill(folder: Path, name: str | None = None, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    skill_md = folder / "SKILL.md"
    text = f"---\nname: {name or folder.name}\ndescription: The {folder.name} skill.\n{extra}---\n"
    skill_md.write_text(text + "# Body\n", encoding="utf-8")
    return skill_md


def names(skills: tuple[Skill, ...]) -> list[str]:
    return [skill.name for skill in skills]


def test_scans_recursively_in_sorted_order(tmp_path: Path) -> None:
    make_skill(tmp_path / "zeta")
    make_skill(tmp_path / "alpha")
    make_skill(tmp_path / "group" / "beta")
    make_skill(tmp_path / "group" / "deeper" / "gamma")
    (tmp_path / "empty").mkdir()
    (tmp_path / "README.md").write_text("not a skill")
    skills, issues = discover_skills([tmp_path])
    assert issues == ()
    assert names(skills) == ["alpha", "beta", "gamma", "zeta"]
    assert all(skill.path.is_absolute() and skill.path.name == "SKILL.md" for skill in skills)
    assert all(skill.directory == skill.path.parent for skill in skills)


def test_directories_keep_their_given_order(tmp_path: Path) -> None:
    make_skill(tmp_path / "one" / "zz")
    make_skill(tmp_path / "two" / "aa")
    skills, _ = discover_skills([tmp_path / "one", tmp_path / "two"])
    assert names(skills) == ["zz", "aa"]
    skills, _ = discover_skills([tmp_path / "two", tmp_path / "one"])
    assert names(skills) == ["aa", "zz"]


def test_a_skill_root_is_not_searched_further(tmp_path: Path) -> None:
    make_skill(tmp_path / "outer")
    make_skill(tmp_path / "outer" / "scripts" / "inner")
    make_skill(tmp_path / "outer" / "broken", extra="name: twice\n")  # would be an error
    skills, issues = discover_skills([tmp_path])
    assert names(skills) == ["outer"]
    assert issues == ()


def test_a_scanned_directory_may_itself_be_a_skill(tmp_path: Path) -> None:
    make_skill(tmp_path / "solo")
    make_skill(tmp_path / "solo" / "nested")
    skills, issues = discover_skills([tmp_path / "solo"])
    assert names(skills) == ["solo"]
    assert issues == ()


def test_hidden_and_tool_folders_are_skipped(tmp_path: Path) -> None:
    make_skill(tmp_path / ".hidden")
    make_skill(tmp_path / "node_modules" / "pkg")
    make_skill(tmp_path / "__pycache__" / "cached")
    make_skill(tmp_path / "sub" / ".git" / "inside")
    make_skill(tmp_path / "visible")
    skills, issues = discover_skills([tmp_path])
    assert names(skills) == ["visible"]
    assert issues == ()


def test_hidden_scanned_directory_itself_is_scanned(tmp_path: Path) -> None:
    make_skill(tmp_path / ".claude" / "skills" / "review")
    skills, _ = discover_skills([tmp_path / ".claude" / "skills"])
    assert names(skills) == ["review"]


def test_lowercase_skill_md_is_accepted_like_the_reference(tmp_path: Path) -> None:
    folder = tmp_path / "lower"
    folder.mkdir()
    (folder / "skill.md").write_text("---\nname: lower\ndescription: d\n---\n")
    skills, issues = discover_skills([tmp_path])
    assert names(skills) == ["lower"]
    assert issues == ()


def test_missing_and_non_directory_roots_are_errors(tmp_path: Path) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    make_skill(tmp_path / "real" / "ok")
    missing = tmp_path / "nope"
    skills, issues = discover_skills([missing, file, tmp_path / "real"])
    assert names(skills) == ["ok"]
    assert [(i.severity, i.file, i.message) for i in issues] == [
        ("error", str(missing), "skills directory does not exist"),
        ("error", str(file), "skills directory is not a directory"),
    ]


def test_name_collision_first_wins_and_the_warning_names_both(tmp_path: Path) -> None:
    first = make_skill(tmp_path / "a" / "dup")
    second = make_skill(tmp_path / "b" / "dup")
    skills, issues = discover_skills([tmp_path / "a", tmp_path / "b"])
    assert [skill.path for skill in skills] == [first]
    (issue,) = issues
    assert issue.severity == "warning"
    assert (issue.file, issue.line, issue.column) == (str(second), 2, 7)
    assert str(first) in issue.message and str(second) in issue.message
    assert "'dup'" in issue.message


def test_collision_uses_the_normalised_name(tmp_path: Path) -> None:
    make_skill(tmp_path / "a" / "wide")
    make_skill(tmp_path / "b" / "wide", name="\uff57\uff49\uff44\uff45")  # fullwidth "wide"
    skills, issues = discover_skills([tmp_path / "a", tmp_path / "b"], display_root=tmp_path)
    assert names(skills) == ["wide"]
    assert [issue.message for issue in issues] == [
        "skill 'wide' is defined twice: keeping a/wide/SKILL.md, ignoring b/wide/SKILL.md"
    ]


def test_the_same_file_found_twice_is_loaded_once(tmp_path: Path) -> None:
    make_skill(tmp_path / "once")
    skills, issues = discover_skills([tmp_path, tmp_path], explicit=[tmp_path / "once"])
    assert names(skills) == ["once"]
    assert issues == ()


def test_explicit_paths_load_first_and_win(tmp_path: Path) -> None:
    scanned = make_skill(tmp_path / "dir" / "shared")
    make_skill(tmp_path / "dir" / "other")
    chosen = make_skill(tmp_path / "cli" / "shared")
    by_file = make_skill(tmp_path / "cli2" / "by-file")
    skills, issues = discover_skills(
        [tmp_path / "dir"], explicit=[tmp_path / "cli" / "shared", by_file], source="manifest"
    )
    assert [(s.name, s.source) for s in skills] == [
        ("shared", "cli"),
        ("by-file", "cli"),
        ("other", "manifest"),
    ]
    assert skills[0].path == chosen
    (issue,) = issues
    assert issue.file == str(scanned) and str(chosen) in issue.message


def test_bad_explicit_paths_are_errors(tmp_path: Path) -> None:
    (tmp_path / "no-skill-here").mkdir()
    other = tmp_path / "notes.md"
    other.write_text("---\nname: notes\ndescription: d\n---\n")
    skills, issues = discover_skills(
        [], explicit=[tmp_path / "gone", tmp_path / "no-skill-here", other], display_root=tmp_path
    )
    assert skills == ()
    assert [(i.file, i.message) for i in issues] == [
        ("gone", "skill path does not exist"),
        ("no-skill-here", "skill path is neither a skill folder nor a SKILL.md file"),
        ("notes.md", "skill path is neither a skill folder nor a SKILL.md file"),
    ]


def test_invalid_skills_report_issues_and_do_not_stop_the_scan(tmp_path: Path) -> None:
    make_skill(tmp_path / "Bad")
    make_skill(tmp_path / "good")
    make_skill(tmp_path / "noisy", extra="homepage: x\n")
    skills, issues = discover_skills([tmp_path], display_root=tmp_path)
    assert names(skills) == ["good", "noisy"]
    assert [issue.format() for issue in issues] == [
        "Bad/SKILL.md:2:7: error: name 'Bad' must be lowercase [name]",
        "noisy/SKILL.md:4:1: warning: unknown field 'homepage'; the spec allows "
        "allowed-tools, compatibility, description, license, metadata, name [homepage]",
    ]
    skills, issues = discover_skills([tmp_path], profile="spec")
    assert names(skills) == ["good"]
    assert [issue.severity for issue in issues] == ["error", "error"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinks_skill_folders_followed_other_folders_not(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_skill(outside / "linked")
    make_skill(outside / "bundle" / "hidden-in-bundle")
    root = tmp_path / "root"
    root.mkdir()
    (root / "linked").symlink_to(outside / "linked", target_is_directory=True)
    (root / "bundle").symlink_to(outside / "bundle", target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    skills, issues = discover_skills([root])
    assert names(skills) == ["linked"]
    assert skills[0].directory == root / "linked"  # the link's own name is the folder name
    assert issues == ()


def test_parse_skill_keeps_metadata_as_written_and_is_hashable(tmp_path: Path) -> None:
    skill_md = make_skill(
        tmp_path / "meta",
        extra='metadata:\n  version: 1.10\n  on: yes\n  quoted: "007"\nallowed-tools: Read Bash\n',
    )
    skill, issues = parse_skill(skill_md)
    assert issues == []
    assert skill is not None
    assert dict(skill.metadata) == {"version": "1.10", "true": "yes", "quoted": "007"}
    assert skill.allowed_tools == "Read Bash"
    assert hash(skill) == hash(parse_skill(skill_md)[0])
    assert skill == parse_skill(skill_md)[0]


def test_parse_skill_relative_path_gives_absolute_skill_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_skill(tmp_path / "rel")
    monkeypatch.chdir(tmp_path)
    skill, issues = parse_skill(Path("rel/SKILL.md"))
    assert issues == []
    assert skill is not None and skill.path == tmp_path / "rel" / "SKILL.md"
    _, issues = parse_skill(Path("rel/missing.md"))
    assert [(i.file, i.message) for i in issues] == [
        ("rel/missing.md", "cannot read file: No such file or directory")
    ]


def test_unknown_profile_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown skill profile"):
        parse_skill(make_skill(tmp_path / "p"), profile="strict")


def test_frontmatter_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    lines = "".join(f"# comment line {i:06d} padding padding\n" for i in range(8000))
    (folder / "SKILL.md").write_text(f"---\nname: huge\ndescription: d\n{lines}---\n")
    skill, issues = parse_skill(folder / "SKILL.md")
    assert skill is None
    assert [issue.message for issue in issues] == [
        "frontmatter is not closed within the first 256 KiB"
    ]


def test_body_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill_md = make_skill(tmp_path / "lazy")
    with skill_md.open("ab") as handle:
        handle.write(b"x" * 5_000_000)
    reads: list[int] = []
    original = Path.open

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = original(self, *args, **kwargs)
        reads.append(1)
        return handle

    monkeypatch.setattr(Path, "open", counting_open)
    skills, issues = discover_skills([tmp_path])
    assert names(skills) == ["lazy"] and issues == ()
    assert len(reads) == 1  # each SKILL.md is opened once


def _fuzz_file(tmp_path: Path, data: bytes) -> Path:
    folder = tmp_path / "fuzz"
    folder.mkdir(exist_ok=True)
    (folder / "SKILL.md").write_bytes(data)
    return folder / "SKILL.md"


FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes_never_raise(tmp_path: Path, data: bytes) -> None:
    for profile in ("lenient", "spec"):
        skill, issues = parse_skill(_fuzz_file(tmp_path, data), profile=profile)
        assert (skill is None) == any(issue.severity == "error" for issue in issues)


@FUZZ
@given(st.text(max_size=1000))
def test_random_text_never_raises(tmp_path: Path, text: str) -> None:
    skill, issues = parse_skill(_fuzz_file(tmp_path, text.encode("utf-8", "surrogatepass")))
    assert skill is not None or issues


_YAMLISH = st.text(
    alphabet=st.sampled_from(list("ab-:_ \n\t[]{}&*!|>'\"#%@`,?~0.eE+\\é漢")), max_size=300
)


@FUZZ
@given(_YAMLISH, st.sampled_from(["", "name: fuzz\n", "name: fuzz\ndescription: d\n"]))
def test_random_frontmatter_never_raises(tmp_path: Path, body: str, head: str) -> None:
    data = f"---\n{head}{body}\n---\n".encode()
    skill, issues = parse_skill(_fuzz_file(tmp_path, data), profile="spec")
    assert skill is not None or any(issue.severity == "error" for issue in issues)
    for issue in issues:
        assert issue.file and issue.message
